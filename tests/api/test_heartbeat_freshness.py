"""A captured heartbeat is refused by every health manager, not only the one that saw it.

Each receiver here is a whole health manager of its own (its own replay guard, caches and
buffered writes) on the one shared database, so a second receiver is both "another
health manager" and "the same one after a restart". Before the newest accepted stamp was
kept in the database, a datagram replayed to a second health manager was accepted: it
counted its traffic again (a report lower than the last looks like a HAProxy reload),
moved the amphora's liveness forward and wrote the statuses it carried.
"""

from __future__ import annotations

import time
from typing import Any

from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver, ReceiverCounts
from lbaas.health.sql_store import SqlHealthStore
from lbaas.model.enums import OperatingStatus
from lbaas.model.health import MemberState
from lbaas.wire.heartbeat.envelope import ReplayGuard, seal
from lbaas.wire.heartbeat.report_codec import to_payload
from tests.api.test_health_store import Scene, bytes_in, last_heartbeat, member_status
from tests.support.api_client import Api

KEY = b"k" * 32
EPOCH = time.time_ns()


class HealthManager:
    """One health-manager process: a receiver over a store of its own, driven directly."""

    def __init__(self, plane: Any, clock: list[float]) -> None:
        self.store = SqlHealthStore(plane.database)
        processor = HeartbeatProcessor(self.store, clock=lambda: clock[0])
        self.receiver = HeartbeatReceiver(processor, KEY, ReplayGuard(max_age=300.0))

    def hear(self, datagram: bytes) -> ReceiverCounts:
        self.receiver.handle_datagram(datagram, "192.0.2.99:4242")
        self.store.flush()
        return self.receiver.counters.snapshot()


def datagram(scene: Scene, sequence: int, bytes_in: int, member: MemberState) -> bytes:
    payload = to_payload(scene.report(bytes_in, member), scene.amphora)
    return seal(payload, KEY, sender=scene.amphora, epoch=EPOCH, sequence=sequence)


def test_a_replay_to_another_health_manager_changes_nothing(api: Api, plane: Any) -> None:
    scene = Scene(api, plane)
    clock = [1_000.0]
    first = HealthManager(plane, clock)
    captured = datagram(scene, 1, 100, MemberState.UP)
    assert first.hear(captured).accepted == 1
    clock[0] = 1_001.0
    assert first.hear(datagram(scene, 2, 300, MemberState.DOWN)).accepted == 2
    member = scene.member["id"]
    assert member_status(plane, member) == OperatingStatus.ERROR
    assert bytes_in(plane, scene.listener["id"]) == 300
    assert last_heartbeat(plane, scene.amphora) == 1_001.0

    # The amphora falls silent; its first heartbeat is replayed to a second health manager.
    clock[0] = 1_030.0
    second = HealthManager(plane, clock)
    second.hear(captured)
    assert bytes_in(plane, scene.listener["id"]) == 300  # not 400: nothing counted again
    assert member_status(plane, member) == OperatingStatus.ERROR  # not revived
    assert last_heartbeat(plane, scene.amphora) == 1_001.0  # still silent since 1001

    # The amphora's next genuine heartbeat is taken by either of them.
    clock[0] = 1_031.0
    assert second.hear(datagram(scene, 3, 350, MemberState.UP)).accepted >= 1
    assert bytes_in(plane, scene.listener["id"]) == 350
    assert member_status(plane, member) == OperatingStatus.ONLINE
    assert last_heartbeat(plane, scene.amphora) == 1_031.0


def test_heartbeats_shared_by_two_health_managers_count_once(api: Api, plane: Any) -> None:
    """Interleaved between two health managers, each report counts once, in order."""
    scene = Scene(api, plane)
    clock = [2_000.0]
    managers = [HealthManager(plane, clock), HealthManager(plane, clock)]
    sent = [datagram(scene, sequence, 10 * sequence, MemberState.UP) for sequence in range(8)]
    for sequence, captured in enumerate(sent):
        clock[0] += 1
        managers[sequence % 2].hear(captured)
    assert bytes_in(plane, scene.listener["id"]) == 70
    assert last_heartbeat(plane, scene.amphora) == 2_008.0
    # Each datagram once more, to the manager that did not see it: nothing moves.
    clock[0] = 2_050.0
    for sequence, captured in enumerate(sent):
        managers[(sequence + 1) % 2].hear(captured)
    assert bytes_in(plane, scene.listener["id"]) == 70
    assert last_heartbeat(plane, scene.amphora) == 2_008.0
