"""The SQL health store on a real graph: what it caches, what it writes, and when not.

A heartbeat is applied against what the process already knows and buffered; these tests
check that what reaches the database is what the old one-transaction-per-step store
wrote, that a steady heartbeat costs no statement at all, and that a status computed from
a graph that changed (or during a converge) is never written.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event, select

from lbaas.db.health import stats_repo
from lbaas.db.tables import AmphoraRow, MemberRow
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor
from lbaas.health.sql_store import SqlHealthStore
from lbaas.model.enums import AmphoraStatus, OperatingStatus, ProvisioningStatus
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from tests.api.test_amphorae import add_amphora
from tests.support.api_client import Api


class Scene:
    def __init__(self, api: Api, plane: Any) -> None:
        self.lb = api.create_lb()
        self.listener = api.create_listener(self.lb["id"])
        self.pool = api.create_pool(self.lb["id"], listener_id=self.listener["id"])
        api.create_child(
            "/v2/lbaas/healthmonitors",
            "healthmonitor",
            self.lb["id"],
            {
                "pool_id": self.pool["id"],
                "type": "HTTP",
                "delay": 5,
                "timeout": 3,
                "max_retries": 3,
            },
        )
        self.member = api.create_member(self.lb["id"], self.pool["id"])
        self.amphora = AmphoraId(add_amphora(plane, self.lb["id"]))
        self.store = SqlHealthStore(plane.database)
        self.processor = HeartbeatProcessor(self.store)

    def report(self, bytes_in: int, member: MemberState = MemberState.UP) -> HealthReport:
        return HealthReport(
            loadbalancer_id=LoadBalancerId(self.lb["id"]),
            listeners={
                ListenerId(self.listener["id"]): ListenerHealth(
                    ListenerState.OPEN, ListenerCounters(bytes_in=bytes_in)
                )
            },
            pools={
                PoolId(self.pool["id"]): PoolHealth(
                    PoolState.UP, {MemberId(self.member["id"]): member}
                )
            },
        )

    def beat(self, bytes_in: int, member: MemberState = MemberState.UP) -> HeartbeatOutcome:
        return self.processor.process(self.amphora, 1, self.report(bytes_in, member))


def member_status(plane: Any, member_id: str) -> str:
    with plane.database.read() as session:
        row = session.get(MemberRow, member_id)
        assert row is not None
        return row.operating_status


def bytes_in(plane: Any, listener_id: str) -> int:
    with plane.database.read() as session:
        return stats_repo.listener_totals(session, [listener_id])[listener_id]["bytes_in"]


def last_heartbeat(plane: Any, amphora_id: str) -> float | None:
    with plane.database.read() as session:
        return session.execute(
            select(AmphoraRow.last_heartbeat_at).where(AmphoraRow.id == amphora_id)
        ).scalar()


@contextmanager
def statements_of_this_thread() -> Iterator[list[str]]:
    seen: list[str] = []
    me = threading.get_ident()

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if threading.get_ident() == me:
            seen.append(statement)

    event.listen(Engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", note)


def test_statuses_at_once_liveness_and_counters_at_the_flush(api: Api, plane: Any) -> None:
    scene = Scene(api, plane)
    assert scene.beat(100) is HeartbeatOutcome.APPLIED
    assert member_status(plane, scene.member["id"]) == OperatingStatus.ONLINE
    assert last_heartbeat(plane, scene.amphora) is None
    scene.beat(150)
    scene.beat(5)  # HAProxy reloaded between two flushes: the 150 before it still count
    scene.store.flush()
    assert last_heartbeat(plane, scene.amphora) is not None
    assert bytes_in(plane, scene.listener["id"]) == 155
    scene.beat(20)
    scene.store.flush()
    assert bytes_in(plane, scene.listener["id"]) == 170


def test_a_steady_heartbeat_runs_no_statement(api: Api, plane: Any) -> None:
    scene = Scene(api, plane)
    scene.beat(1)
    with statements_of_this_thread() as seen:
        assert scene.beat(2) is HeartbeatOutcome.APPLIED
    assert seen == []
    with statements_of_this_thread() as seen:
        assert scene.beat(3, MemberState.DOWN) is HeartbeatOutcome.APPLIED
    # Only the member, the pool and the load balancer changed: one UPDATE each, after
    # the lock and the generation check.
    assert len([s for s in seen if s.lstrip().upper().startswith("UPDATE")]) == 3
    assert member_status(plane, scene.member["id"]) == OperatingStatus.ERROR


def test_no_status_from_a_changed_graph_or_during_a_converge(api: Api, plane: Any) -> None:
    scene = Scene(api, plane)
    assert scene.beat(1) is HeartbeatOutcome.APPLIED
    plane.worker.stop()
    member_path = f"/v2/lbaas/pools/{scene.pool['id']}/members/{scene.member['id']}"
    r = api.put(member_path, {"member": {"admin_state_up": False}})
    assert r.status_code == 200, r.text
    # The cached graph is older than the stored one: refused, and forgotten.
    assert scene.beat(2, MemberState.DOWN) is HeartbeatOutcome.DEFERRED
    assert member_status(plane, scene.member["id"]) == OperatingStatus.ONLINE
    # Reloaded while PENDING_UPDATE: deferred without asking the database.
    assert scene.beat(3, MemberState.DOWN) is HeartbeatOutcome.DEFERRED
    with statements_of_this_thread() as seen:
        assert scene.beat(4, MemberState.DOWN) is HeartbeatOutcome.DEFERRED
    assert seen == []
    while plane.worker.run_once():
        pass
    api.wait_lb(scene.lb["id"], ProvisioningStatus.ACTIVE.value)
    scene.store.flush()  # the flush sees the new version and drops the graph read as pending
    assert scene.beat(5, MemberState.DOWN) is HeartbeatOutcome.APPLIED
    # The new graph's view: the member is administratively down, not in ERROR.
    assert member_status(plane, scene.member["id"]) == OperatingStatus.OFFLINE


def test_a_deleted_amphora_is_forgotten_at_the_next_flush(api: Api, plane: Any) -> None:
    scene = Scene(api, plane)
    assert scene.beat(1) is HeartbeatOutcome.APPLIED
    with plane.database.write() as session:
        row = session.get(AmphoraRow, scene.amphora)
        assert row is not None
        row.status = AmphoraStatus.DELETED.value
    scene.beat(2)
    scene.store.flush()
    assert scene.beat(3) is HeartbeatOutcome.UNKNOWN_AMPHORA
