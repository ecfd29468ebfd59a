"""Host heartbeats: sent to every health manager, decoded, applied to a host registry."""

from __future__ import annotations

import socket
from collections.abc import Collection, Iterator
from dataclasses import replace

import pytest

from lbaas.errors import HeartbeatRejected
from lbaas.fleet.heartbeat_sender import HeartbeatSender
from lbaas.fleet.peer_versions import PeerVersions
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.model.fleet import HostAddress, HostAnnouncement, SilentHost
from lbaas.wire.heartbeat.envelope import ReplayGuard, open_envelope, seal
from lbaas.wire.heartbeat.host_codec import from_host_payload, host_sender, to_host_payload
from lbaas.wire.versions import WIRE_VERSION
from tests.support.udp import udp_receiver

KEY = b"test-key-for-host-heartbeats"
SEEN = HostAnnouncement("host-7", "127.0.0.7", 9447, "rack-b", 20, ("amp-1", "amp-2"))


class RecordingRegistry:
    """A ``HostRegistry`` that knows the hosts in ``known`` and notes what it applied."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.recorded: list[tuple[HostAnnouncement, int, int]] = []

    def record(self, seen: HostAnnouncement, epoch: int, sequence: int, at: float) -> bool:
        if seen.host_id not in self.known:
            return False
        self.recorded.append((seen, epoch, sequence))
        return True

    def mark_silent_down(self, host_ids: Collection[str], heard_before: float) -> list[str]:
        return []

    def silent_up(self, heard_before: float) -> list[SilentHost]:
        return []

    def misplaced(self) -> list[tuple[HostAddress, list[str]]]:
        return []


@pytest.fixture
def two_managers() -> Iterator[tuple[socket.socket, socket.socket]]:
    with udp_receiver(5) as first, udp_receiver(5) as second:
        yield first, second


def test_each_datagram_goes_to_every_health_manager_with_the_host_first(
    two_managers: tuple[socket.socket, socket.socket],
) -> None:
    first, second = two_managers
    sender = HeartbeatSender(
        lambda: [],
        KEY,
        [first.getsockname(), second.getsockname()],
        epoch=3,
        host_report=lambda: (host_sender(SEEN.host_id), to_host_payload(SEEN)),
    )
    try:
        assert sender.send_once() == 1
    finally:
        sender.stop()
    for sock in (first, second):
        envelope = open_envelope(sock.recv(65535), KEY)
        assert envelope.sender == "host:host-7"
        assert from_host_payload(envelope.payload, envelope.sender) == SEEN


def test_a_dead_health_manager_does_not_stop_the_others(
    two_managers: tuple[socket.socket, socket.socket],
) -> None:
    first, _ = two_managers
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as gone:
        gone.bind(("127.0.0.1", 0))
        dead = gone.getsockname()  # closed below: nothing listens there any more
    sender = HeartbeatSender(
        lambda: [],
        KEY,
        [dead, first.getsockname()],
        host_report=lambda: (host_sender(SEEN.host_id), to_host_payload(SEEN)),
    )
    try:
        for _ in range(3):
            sender.send_once()
    finally:
        sender.stop()
    assert open_envelope(first.recv(65535), KEY).sender == "host:host-7"


def test_a_host_payload_must_come_from_that_host() -> None:
    with pytest.raises(HeartbeatRejected, match="names host"):
        from_host_payload(to_host_payload(SEEN), "host:host-8")
    with pytest.raises(HeartbeatRejected, match="names host"):
        from_host_payload(to_host_payload(SEEN), "amp-1")
    with pytest.raises(HeartbeatRejected, match="malformed"):
        from_host_payload({"kind": "host", "host_id": "host-7"}, "host:host-7")


def test_the_receiver_applies_host_heartbeats_to_the_registry_only() -> None:
    registry = RecordingRegistry({"host-7"})
    store = InMemoryHealthStore()
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), KEY, ReplayGuard(), hosts=registry)
    payload = to_host_payload(SEEN)
    receiver.handle_datagram(seal(payload, KEY, sender="host:host-7", epoch=9, sequence=1), "x")
    stranger = to_host_payload(HostAnnouncement("host-9", "", 1, "nova", 1, ()))
    receiver.handle_datagram(seal(stranger, KEY, sender="host:host-9", epoch=9, sequence=1), "x")
    forged = seal(payload, KEY, sender="amp-1", epoch=9, sequence=2)
    receiver.handle_datagram(forged, "x")
    counts = receiver.counters.snapshot()
    assert registry.recorded == [(SEEN, 9, 1)]
    assert (counts.accepted, counts.ignored, counts.malformed) == (1, 1, 1)


def test_the_receiver_notes_each_hosts_wire_version() -> None:
    """A host heartbeat states the agent's wire version; one without it is version 1's."""
    registry = RecordingRegistry({"host-7", "host-8"})
    versions = PeerVersions()
    receiver = HeartbeatReceiver(
        HeartbeatProcessor(InMemoryHealthStore()),
        KEY,
        ReplayGuard(),
        hosts=registry,
        versions=versions,
    )
    new = replace(SEEN, wire_version=WIRE_VERSION)
    old = HostAnnouncement("host-8", "127.0.0.8", 9448, "rack-b", 20, ())
    for seen in (new, old):
        datagram = seal(
            to_host_payload(seen), KEY, sender=host_sender(seen.host_id), epoch=9, sequence=1
        )
        receiver.handle_datagram(datagram, "x")
    assert "wire_version" not in to_host_payload(old)
    assert from_host_payload(to_host_payload(new), "host:host-7").wire_version == WIRE_VERSION
    assert versions.snapshot() == {"host-7": WIRE_VERSION, "host-8": 1}
    assert versions.in_use() == 1
