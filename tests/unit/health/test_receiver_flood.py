"""A flood of forged datagrams does not cost an amphora its heartbeats.

Real sockets: another process sends forged heartbeats from one socket as fast as it can
while this one sends the genuine heartbeats of two amphorae at the normal interval from
another, as an agent does. Every genuine heartbeat must be processed. (Before the source
throttle and the kernel filter, one receive thread refused some 30,000 a second while the
flood came at several times that; the kernel dropped most genuine heartbeats with the
forged ones once the socket buffer was full.) Only counts are asserted, never speed.
"""

from __future__ import annotations

import multiprocessing
import socket
import time
from typing import Any

import pytest

from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.model.graph import AmphoraId
from lbaas.wire.heartbeat.envelope import ReplayGuard, seal

from .builders import LB_ID, listener, loadbalancer, member, monitor, pool
from .test_receiver import payload

# A flood of the loopback at full speed: alone, so neither it nor another test is starved.
pytestmark = pytest.mark.system

KEY = b"flood-test-heartbeat-key"
AMPHORAE = [AmphoraId("amp-flood-1"), AmphoraId("amp-flood-2")]
ROUNDS = 5
INTERVAL = 1.0  # health.heartbeat_interval's default


def _flood(address: tuple[str, int], seconds: float, sample: bytes, started: Any) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    started.value = 1
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(256):
            try:
                sock.sendto(sample, address)
            except OSError:
                pass


def test_a_flood_from_one_socket_loses_no_genuine_heartbeat() -> None:
    store = InMemoryHealthStore()
    for amphora in AMPHORAE:
        store.add_amphora(amphora, LB_ID)
    store.put_graph(loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=monitor())]))
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), KEY, ReplayGuard(max_age=300.0))
    forged = seal(payload(AMPHORAE[0]), b"not-the-key", sender="host-1", epoch=1, sequence=1)
    spawn = multiprocessing.get_context("spawn")
    started = spawn.Value("i", 0)
    agent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with receiver, agent:
        flooder = spawn.Process(
            target=_flood, args=(receiver.address, ROUNDS * INTERVAL + 2, forged, started)
        )
        flooder.start()
        try:
            _wait(lambda: started.value == 1 and receiver.counters.snapshot().rejected > 0)
            epoch, sequence, sent = time.time_ns(), 0, 0
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
                time.sleep(INTERVAL)
        finally:
            flooder.join(60)
            if flooder.is_alive():
                flooder.kill()
        _wait(lambda: receiver.counters.snapshot().accepted >= sent, limit=20)
        counts = receiver.counters.snapshot()
    assert counts.accepted == sent == ROUNDS * len(AMPHORAE)
    assert counts.dropped == counts.failed == counts.malformed == 0
    assert receiver.throttle.blocks >= 1  # the flooding socket was blocked
    assert counts.rejected_signature + counts.rejected_throttled > 0


def _wait(condition: Any, limit: float = 30) -> None:
    deadline = time.monotonic() + limit  # a bound against hanging, not an assertion
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
