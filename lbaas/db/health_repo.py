"""Storage the health manager needs: amphora liveness, listener counters, failovers."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import bindparam, case, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from lbaas.db import job_queue
from lbaas.db.tables import AmphoraRow, ListenerStatsRow, LoadBalancerRow, table_of

LIVE_AMPHORA = ("ALLOCATED", "READY", "BOOTING", "PENDING_CREATE")


_AMPHORAE = table_of(AmphoraRow).c
# One statement per heartbeat (it runs for every amphora every few seconds): it both
# proves the amphora is known for that load balancer (the row count) and moves its
# last-heard time forward, never back (datagrams may arrive out of order).
_RECORD_HEARTBEAT = (
    update(table_of(AmphoraRow))
    .where(
        _AMPHORAE.id == bindparam("amp"),
        _AMPHORAE.loadbalancer_id == bindparam("lb"),
        _AMPHORAE.status != "DELETED",
    )
    .values(
        last_heartbeat_at=case(
            (
                or_(
                    _AMPHORAE.last_heartbeat_at.is_(None),
                    _AMPHORAE.last_heartbeat_at < bindparam("at"),
                ),
                bindparam("at"),
            ),
            else_=_AMPHORAE.last_heartbeat_at,
        )
    )
)


def record_heartbeat(session: Session, amphora_id: str, loadbalancer_id: str, at: float) -> bool:
    result = session.connection().execute(
        _RECORD_HEARTBEAT, {"amp": amphora_id, "lb": loadbalancer_id, "at": at}
    )
    return bool(result.rowcount)


_STATS = table_of(ListenerStatsRow)
_LOCK_COUNTERS = (
    select(_STATS.c.listener_id, _STATS.c.epoch, _STATS.c.base, _STATS.c.last)
    .where(_STATS.c.amphora_id == bindparam("amp"))
    .with_for_update()
)


def _upsert_counters(insert: Any) -> Any:
    stmt = insert(_STATS).values({c.key: bindparam(c.key) for c in _STATS.columns})
    changing = {name: stmt.excluded[name] for name in ("epoch", "base", "last")}
    return stmt.on_conflict_do_update(index_elements=["amphora_id", "listener_id"], set_=changing)


# Built once per dialect: counters are written for every heartbeat.
_PUT_COUNTERS = {
    "postgresql": _upsert_counters(postgresql_insert),
    "sqlite": _upsert_counters(sqlite_insert),
}


def lock_counters(session: Session, amphora_id: str) -> list[Any]:
    """(listener_id, epoch, base, last) of each listener of the amphora, rows locked."""
    return list(session.connection().execute(_LOCK_COUNTERS, {"amp": amphora_id}))


def put_counters(
    session: Session,
    amphora_id: str,
    loadbalancer_id: str,
    listener_id: str,
    epoch: int,
    base: dict[str, int],
    last: dict[str, int],
) -> None:
    conn = session.connection()
    conn.execute(
        _PUT_COUNTERS[conn.dialect.name],
        {
            "amphora_id": amphora_id,
            "listener_id": listener_id,
            "loadbalancer_id": loadbalancer_id,
            "epoch": epoch,
            "base": base,
            "last": last,
        },
    )


_LBS = table_of(LoadBalancerRow).c
_LB_STATUS_LOCKED = (
    select(_LBS.provisioning_status).where(_LBS.id == bindparam("lb")).with_for_update()
)


def loadbalancer_is_settled(session: Session, loadbalancer_id: str) -> bool:
    """True when the load balancer exists and is not PENDING_* (lock held)."""
    status = session.connection().execute(_LB_STATUS_LOCKED, {"lb": loadbalancer_id}).scalar()
    return status in ("ACTIVE", "ERROR")


def heartbeating_amphorae(session: Session) -> list[tuple[str, str, float]]:
    rows = session.execute(
        select(AmphoraRow.id, AmphoraRow.loadbalancer_id, AmphoraRow.last_heartbeat_at).where(
            AmphoraRow.status.in_(LIVE_AMPHORA),
            AmphoraRow.loadbalancer_id.is_not(None),
            AmphoraRow.last_heartbeat_at.is_not(None),
        )
    )
    return [(a, str(lb), float(t or 0.0)) for a, lb, t in rows]


def request_failover(session: Session, amphora_id: str, now: Any) -> bool:
    """Mark the amphora failing over and enqueue a rebuild of its load balancer."""
    amp = session.get(AmphoraRow, amphora_id, with_for_update=True)
    if amp is None or amp.failover_pending or amp.loadbalancer_id is None:
        return False
    if amp.status not in LIVE_AMPHORA:
        return False
    amp.failover_pending = True
    lb = session.get(LoadBalancerRow, amp.loadbalancer_id, with_for_update=True)
    if lb is None:
        return False
    if lb.provisioning_status == "ACTIVE":
        lb.provisioning_status = "PENDING_UPDATE"
        lb.updated_at = now
    job_queue.enqueue_converge(session, lb.id, time.time(), rebuild=True)
    return True
