"""The receiver on a real UDP socket: genuine heartbeats pass, everything else is counted."""

from __future__ import annotations

import hmac
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from lbaas.health.freshness import HeartbeatStamp
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver, ReceiverCounts
from lbaas.health.refusals import RefusalLog
from lbaas.health.rollup import OperatingStatuses
from lbaas.health.store import CounterUpdate
from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import AmphoraId, LoadBalancerId, MemberId
from lbaas.model.health import ListenerHealth, ListenerState, MemberState, PoolState
from lbaas.wire.heartbeat.envelope import MAGIC, VERSION, ReplayGuard, seal
from lbaas.wire.heartbeat.report_codec import to_payload

from .builders import LB_ID, counters, listener, loadbalancer, member, monitor, pool, report

KEY = b"test-heartbeat-key"
NOW = 1_700_000_000.0
AMP = AmphoraId("amp-1")
EPOCH = 1_699_999_000_000_000_000


class RecordingStore(InMemoryHealthStore):
    """The in-memory store, noting every write the receiver's processor makes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.fail_next = False

    def record_heartbeat(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        received_at: float,
        stamp: HeartbeatStamp | None = None,
    ) -> bool:
        self.writes.append("record_heartbeat")
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("database went away")
        return super().record_heartbeat(amphora_id, loadbalancer_id, received_at, stamp)

    def update_listener_counters(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        update: CounterUpdate,
        stamp: HeartbeatStamp | None = None,
    ) -> None:
        self.writes.append("update_listener_counters")
        super().update_listener_counters(amphora_id, loadbalancer_id, update, stamp)

    def apply_operating_statuses(
        self,
        loadbalancer_id: LoadBalancerId,
        statuses: OperatingStatuses,
        heard_from: tuple[AmphoraId, HeartbeatStamp] | None = None,
    ) -> bool:
        self.writes.append("apply_operating_statuses")
        return super().apply_operating_statuses(loadbalancer_id, statuses, heard_from)


@pytest.fixture
def store() -> RecordingStore:
    recording = RecordingStore()
    recording.add_amphora(AMP, LB_ID)
    recording.put_graph(
        loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=monitor())])
    )
    return recording


@pytest.fixture
def receiver(store: RecordingStore) -> Iterator[HeartbeatReceiver]:
    guard = ReplayGuard(max_age=30.0, clock=lambda: NOW)
    processor = HeartbeatProcessor(store, clock=lambda: NOW)
    with HeartbeatReceiver(
        processor, KEY, guard, host="127.0.0.1", port=0, poll_interval=0.02
    ) as running:
        yield running


@pytest.fixture
def send(receiver: HeartbeatReceiver) -> Iterator[Callable[[bytes], ReceiverCounts]]:
    """Send one datagram and wait until the receiver has counted it."""
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def send_one(datagram: bytes) -> ReceiverCounts:
        before = _handled(receiver.counters.snapshot())
        client.sendto(datagram, receiver.address)
        deadline = time.monotonic() + 10  # a bound against hanging, not an assertion
        while time.monotonic() < deadline:
            counts = receiver.counters.snapshot()
            if _handled(counts) > before:
                return counts
            time.sleep(0.005)
        raise AssertionError("the receiver never handled the datagram")

    yield send_one
    client.close()


def _handled(counts: ReceiverCounts) -> int:
    return counts.accepted + counts.rejected + counts.ignored + counts.failed


def payload(amphora_id: str = AMP) -> dict[str, Any]:
    observed = report(
        {"l": ListenerHealth(ListenerState.OPEN, counters(100, 200, 1, 3, 0))},
        {"p": (PoolState.UP, {"m": MemberState.UP})},
    )
    return to_payload(observed, amphora_id)


def heartbeat(
    sequence: int = 1,
    *,
    key: bytes = KEY,
    sent_at: float = NOW,
    body: Mapping[str, Any] | None = None,
) -> bytes:
    return seal(
        payload() if body is None else body,
        key,
        sender="host-1",
        epoch=EPOCH,
        sequence=sequence,
        sent_at=sent_at,
    )


def test_valid_heartbeat_is_processed(
    send: Callable[[bytes], ReceiverCounts], store: RecordingStore
) -> None:
    counts = send(heartbeat())
    assert counts == ReceiverCounts(accepted=1)
    assert store.last_seen(AMP) == NOW
    statuses = store.statuses(LB_ID)
    assert statuses is not None and statuses.members[MemberId("m")] is OperatingStatus.ONLINE
    assert store.writes == [
        "record_heartbeat",
        "update_listener_counters",
        "apply_operating_statuses",
    ]


@pytest.mark.parametrize(
    ("datagram", "counter"),
    [
        (heartbeat(key=b"not-the-key"), "rejected_signature"),
        (heartbeat()[:-32], "rejected_signature"),  # signature cut off
        (b"hello, health manager", "rejected_signature"),
        (b"", "rejected_signature"),
        (heartbeat(sent_at=NOW - 300), "rejected_late"),  # stale
        (heartbeat(sent_at=NOW + 300), "rejected_late"),  # from the future
        (heartbeat(body={"amphora_id": 7}), "malformed"),
        (heartbeat(body={**payload(), "pools": {"p": {"state": "SIDEWAYS"}}}), "malformed"),
    ],
    ids=[
        "forged",
        "unsigned",
        "garbage",
        "empty",
        "stale",
        "future",
        "bad amphora id",
        "bad pool state",
    ],
)
def test_rejected_datagrams_are_counted_and_never_reach_the_store(
    send: Callable[[bytes], ReceiverCounts],
    store: RecordingStore,
    datagram: bytes,
    counter: str,
) -> None:
    counts = send(datagram)
    assert counts == ReceiverCounts(**{counter: 1})
    assert store.writes == []


def test_replayed_datagram_is_rejected(
    send: Callable[[bytes], ReceiverCounts], store: RecordingStore
) -> None:
    captured = heartbeat(sequence=5)
    send(captured)
    counts = send(captured)
    assert counts == ReceiverCounts(accepted=1, rejected_replay=1)
    assert store.writes.count("record_heartbeat") == 1
    assert send(heartbeat(sequence=4)).rejected_replay == 2  # older sequence
    assert send(heartbeat(sequence=6)).accepted == 2


def test_heartbeat_of_an_unknown_amphora_is_ignored(
    send: Callable[[bytes], ReceiverCounts], store: RecordingStore
) -> None:
    counts = send(heartbeat(body=payload("amp-stranger")))
    assert counts == ReceiverCounts(ignored=1)
    assert store.writes == ["record_heartbeat"]


def test_a_failing_store_is_counted_and_the_receiver_keeps_serving(
    send: Callable[[bytes], ReceiverCounts], store: RecordingStore
) -> None:
    store.fail_next = True
    assert send(heartbeat(sequence=1)) == ReceiverCounts(failed=1)
    assert send(heartbeat(sequence=2)) == ReceiverCounts(failed=1, accepted=1)


def test_address_is_only_known_once_started(store: RecordingStore) -> None:
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), KEY, ReplayGuard())
    with pytest.raises(RuntimeError):
        _ = receiver.address
    receiver.start()
    try:
        host, port = receiver.address
        assert host == "127.0.0.1" and port > 0
    finally:
        receiver.stop()


def test_refusals_are_logged_once_per_interval(
    store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    refusals = RefusalLog(interval=10.0, clock=lambda: now[0])
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), KEY, ReplayGuard(), refusals=refusals)
    forged = heartbeat(key=b"not-the-key")
    with caplog.at_level(logging.WARNING, logger="lbaas.health.refusals"):
        for _ in range(1000):
            receiver.handle_datagram(forged, "203.0.113.9")
        now[0] = 10.0
        receiver.handle_datagram(forged, "203.0.113.9")
    assert receiver.counters.snapshot().rejected_signature == 1001
    assert refusals.lines == 2  # the first at once, then one summary of the next 1000
    assert len(caplog.records) == 2
    assert "refused 1000 heartbeat datagram(s) (rejected_signature 1000)" in caplog.messages[1]
    assert store.writes == []


def test_an_oversized_datagram_is_refused_before_it_is_parsed(
    receiver: HeartbeatReceiver, store: RecordingStore
) -> None:
    """Signed with the right key, but larger than any agent sends: not even hashed."""
    body = json.dumps({"sender": "host-1", "padding": "x" * 65_100}).encode()
    head = MAGIC + bytes([VERSION]) + body
    receiver.handle_datagram(head + hmac.digest(KEY, head, "sha256"), "192.0.2.1")
    assert receiver.counters.snapshot() == ReceiverCounts(rejected_signature=1)
    assert store.writes == []


class BlockingStore(RecordingStore):
    """Holds the processing loop inside the store until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def record_heartbeat(self, *args: Any, **kwargs: Any) -> bool:
        self.release.wait(30)  # a bound against hanging, not an assertion
        return super().record_heartbeat(*args, **kwargs)


def test_forged_datagrams_are_refused_while_a_heartbeat_is_being_processed() -> None:
    """Receiving does not wait for processing: a slow store cannot stall refusals."""
    store = BlockingStore()
    store.add_amphora(AMP, LB_ID)
    store.put_graph(loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=monitor())]))
    guard = ReplayGuard(max_age=30.0, clock=lambda: NOW)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), KEY, guard, poll_interval=0.02)
    with receiver, client:
        client.sendto(heartbeat(sequence=1), receiver.address)
        for _ in range(50):
            client.sendto(heartbeat(key=b"forged"), receiver.address)
        client.sendto(heartbeat(sequence=2), receiver.address)
        _wait_for(lambda: receiver.counters.snapshot().rejected_signature == 50)
        assert receiver.counters.snapshot().accepted == 0  # the store is still held
        store.release.set()
        _wait_for(lambda: receiver.counters.snapshot().accepted == 2)
    assert receiver.counters.snapshot() == ReceiverCounts(accepted=2, rejected_signature=50)


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20  # a bound against hanging, not an assertion
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition never held")
        time.sleep(0.005)
