"""A flood of forged datagrams, of any shape, does not cost an amphora its heartbeats.

Real sockets: another process sends forged heartbeats as fast as it can while this one
sends the genuine heartbeats of two amphorae at the normal interval, as an agent does.
The flood comes in three shapes: from one socket of its own; from the agent's own source
address and port (a second socket bound to it with ``SO_REUSEPORT``: to the receiver
exactly what a forged source address looks like, without raw sockets); and from 256
sources spread over 127.0.0.0/8. (A receiver
that blocked sources failing the HMAC lost nearly all of the agent's heartbeats to the
second shape; one that checked each datagram at some 10,000 a second lost them to the
kernel's full socket buffer.) Every genuine heartbeat must be processed, unless the
kernel counted receive-buffer overflows meanwhile (the flood outran the receive thread
on this loaded machine): then some may be lost with the forged datagrams, but never three
of one amphora in a row, which is what would make it look silent for ``stale_after``
(3 intervals). Only counts and sequence numbers are asserted, never speed.
"""

from __future__ import annotations

import multiprocessing
import socket
import time
from typing import Any

import pytest

from lbaas.health.freshness import HeartbeatStamp
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.model.graph import AmphoraId, LoadBalancerId
from lbaas.wire.heartbeat.envelope import ReplayGuard, seal

from .builders import LB_ID, listener, loadbalancer, member, monitor, pool
from .test_receiver import payload

# A flood of the loopback at full speed: alone, so neither it nor another test is starved.
pytestmark = pytest.mark.system

KEY = b"flood-test-heartbeat-key"
AMPHORAE = [AmphoraId("amp-flood-1"), AmphoraId("amp-flood-2")]
ROUNDS = 5
INTERVAL = 1.0  # health.heartbeat_interval's default


SHAPES = ["own_socket", "agent_source", "many_sources"]


class SequenceRecordingStore(InMemoryHealthStore):
    """The in-memory store, remembering each amphora's heartbeat sequence numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.sequences: dict[AmphoraId, set[int]] = {}

    def record_heartbeat(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        received_at: float,
        stamp: HeartbeatStamp | None = None,
    ) -> bool:
        if stamp is not None:
            self.sequences.setdefault(amphora_id, set()).add(stamp.sequence)
        return super().record_heartbeat(amphora_id, loadbalancer_id, received_at, stamp)


def _longest_silence(sent: list[int], received: set[int]) -> int:
    """The most heartbeats in a row, of those ``sent``, that were not ``received``."""
    longest = run = 0
    for sequence in sent:
        run = 0 if sequence in received else run + 1
        longest = max(longest, run)
    return longest


def _sources(shape: str, agent: tuple[str, int]) -> list[socket.socket]:
    """The flooder's sockets: where its datagrams claim to come from."""
    if shape == "own_socket":
        return [socket.socket(socket.AF_INET, socket.SOCK_DGRAM)]
    if shape == "agent_source":
        return [_reusing_port(agent)]
    sockets = []
    for n in range(256):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((f"127.{1 + n % 200}.{n // 200}.{1 + n % 250}", 0))
        sockets.append(sock)
    return sockets


def _reusing_port(address: tuple[str, int]) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    return sock


def _flood(
    address: tuple[str, int],
    seconds: float,
    sample: bytes,
    started: Any,
    shape: str,
    agent: tuple[str, int],
) -> None:
    sockets = _sources(shape, agent)
    started.value = 1
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for sock in sockets:
            for _ in range(max(1, 256 // len(sockets))):
                try:
                    sock.sendto(sample, address)
                except OSError:
                    pass


@pytest.mark.parametrize("shape", SHAPES)
def test_a_flood_loses_no_genuine_heartbeat(shape: str) -> None:
    store = SequenceRecordingStore()
    for amphora in AMPHORAE:
        store.add_amphora(amphora, LB_ID)
    store.put_graph(loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=monitor())]))
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), KEY, ReplayGuard(max_age=300.0))
    forged = seal(payload(AMPHORAE[0]), b"not-the-key", sender="host-1", epoch=1, sequence=1)
    spawn = multiprocessing.get_context("spawn")
    started = spawn.Value("i", 0)
    agent = _reusing_port(("127.0.0.1", 0))
    overflows_before = _receive_buffer_errors()
    with receiver, agent:
        seconds, source = ROUNDS * INTERVAL + 2, agent.getsockname()
        flooder = spawn.Process(
            target=_flood, args=(receiver.address, seconds, forged, started, shape, source)
        )
        flooder.start()
        try:
            _wait(lambda: started.value == 1 and receiver.counters.snapshot().rejected > 0)
            epoch, sequence, sent = time.time_ns(), 0, 0
            sent_by: dict[AmphoraId, list[int]] = {amphora: [] for amphora in AMPHORAE}
            for _ in range(ROUNDS):
                for amphora in AMPHORAE:
                    sequence += 1
                    agent.sendto(
                        seal(
                            payload(amphora), KEY, sender="host-1", epoch=epoch, sequence=sequence
                        ),
                        receiver.address,
                    )
                    sent += 1
                    sent_by[amphora].append(sequence)
                time.sleep(INTERVAL)
        finally:
            flooder.join(60)
            if flooder.is_alive():
                flooder.kill()
        _wait(lambda: receiver.counters.snapshot().accepted >= sent, limit=20)
        counts = receiver.counters.snapshot()
    assert sent == ROUNDS * len(AMPHORAE)
    if _receive_buffer_errors() == overflows_before:
        assert counts.accepted == sent
    else:  # the kernel's full buffer dropped datagrams, genuine with forged: never 3 in a row
        for amphora in AMPHORAE:
            received = store.sequences.get(amphora, set())
            assert _longest_silence(sent_by[amphora], received) < 3, (amphora, received)
    assert counts.dropped == counts.failed == counts.malformed == 0
    assert counts.rejected_signature > 0


def _receive_buffer_errors() -> int:
    """UDP datagrams the kernel dropped for a full socket buffer, host-wide."""
    with open("/proc/net/snmp") as snmp:
        rows = [line.split() for line in snmp if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def _wait(condition: Any, limit: float = 30) -> None:
    deadline = time.monotonic() + limit  # a bound against hanging, not an assertion
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
