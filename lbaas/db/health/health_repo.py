"""Storage the health manager needs: amphora liveness, listener counters, failovers.

The per-heartbeat statements (``record_heartbeat``, ``lock_counters``, ``put_counters``)
serve one heartbeat at a time; the batch ones (``amphora_assignments``,
``record_heartbeats``, ``lock_counters_of``, ``put_counter_rows``, ``loadbalancer_versions``,
``loadbalancer_is_settled_at``) serve the SQL health store, which applies heartbeats in
memory and writes what changed once per flush interval.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Connection, bindparam, case, func, or_, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from lbaas.db.counter_totals import TOTAL_COLUMNS, record_totals
from lbaas.db.jobs import job_queue
from lbaas.db.tables import (
    AmphoraRow,
    ConvergeJobRow,
    ListenerStatsRow,
    LoadBalancerRow,
    table_of,
)
from lbaas.model.enums import AmphoraStatus, ProvisioningStatus

LIVE_AMPHORA = (
    AmphoraStatus.ALLOCATED.value,
    AmphoraStatus.READY.value,
    AmphoraStatus.BOOTING.value,
    AmphoraStatus.PENDING_CREATE.value,
)
_SETTLED = (ProvisioningStatus.ACTIVE.value, ProvisioningStatus.ERROR.value)


_AMPHORAE = table_of(AmphoraRow).c
# One statement per heartbeat (it runs for every amphora every few seconds): it both
# proves the amphora is known for that load balancer (the row count) and moves its
# last-heard time forward, never back (datagrams may arrive out of order).
_LAST_HEARD = case(
    (
        or_(
            _AMPHORAE.last_heartbeat_at.is_(None),
            _AMPHORAE.last_heartbeat_at < bindparam("at"),
        ),
        bindparam("at"),
    ),
    else_=_AMPHORAE.last_heartbeat_at,
)
_RECORD_HEARTBEAT = (
    update(table_of(AmphoraRow))
    .where(
        _AMPHORAE.id == bindparam("amp"),
        _AMPHORAE.loadbalancer_id == bindparam("lb"),
        _AMPHORAE.status != AmphoraStatus.DELETED.value,
    )
    .values(last_heartbeat_at=_LAST_HEARD)
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
    changing = {name: stmt.excluded[name] for name in ("epoch", "base", "last", *TOTAL_COLUMNS)}
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
            **record_totals(base, last),
        },
    )


_LBS = table_of(LoadBalancerRow).c
_LB_STATUS_LOCKED = (
    select(_LBS.provisioning_status).where(_LBS.id == bindparam("lb")).with_for_update()
)


def loadbalancer_is_settled(session: Session, loadbalancer_id: str) -> bool:
    """True when the load balancer exists and is not PENDING_* (lock held)."""
    status = session.connection().execute(_LB_STATUS_LOCKED, {"lb": loadbalancer_id}).scalar()
    return status in _SETTLED


def heartbeating_amphorae(
    session: Session,
) -> list[tuple[str, str, float, str | None, str | None]]:
    """(amphora, load balancer, last heard, host, VRRP address) of each amphora expected
    to heartbeat.

    Every live amphora heard from, and every serving (ALLOCATED) one never heard from,
    whose silence counts from when it was put into service (its ``updated_at``, which
    only moves later): a host lost or cut off between a new amphora's start and its first
    heartbeat reaching a health manager must not leave that amphora out of failover for
    good. Amphorae still being built are left out.
    """
    rows = session.execute(
        select(
            AmphoraRow.id,
            AmphoraRow.loadbalancer_id,
            AmphoraRow.last_heartbeat_at,
            AmphoraRow.updated_at,
            AmphoraRow.created_at,
            AmphoraRow.compute_id,
            AmphoraRow.vrrp_ip,
        ).where(
            AmphoraRow.status.in_(LIVE_AMPHORA),
            AmphoraRow.loadbalancer_id.is_not(None),
            or_(
                AmphoraRow.last_heartbeat_at.is_not(None),
                AmphoraRow.status == AmphoraStatus.ALLOCATED.value,
            ),
        )
    )
    return [
        (a, str(lb), float(t) if t is not None else _epoch(updated or created), host, vrrp)
        for a, lb, t, updated, created, host, vrrp in rows
    ]


def _epoch(at: datetime) -> float:
    """A naive UTC column value as seconds since the epoch."""
    return at.replace(tzinfo=UTC).timestamp()


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
    if lb.provisioning_status == ProvisioningStatus.ACTIVE:
        lb.provisioning_status = ProvisioningStatus.PENDING_UPDATE.value
        lb.updated_at = now
    job_queue.enqueue_converge(session, lb.id, time.time(), rebuild=True)
    return True


# Batches: the SQL health store writes once per flush interval what many heartbeats changed.

_SERVING = (
    _AMPHORAE.id.in_(bindparam("amps", expanding=True)),
    _AMPHORAE.status != AmphoraStatus.DELETED.value,
    _AMPHORAE.loadbalancer_id.is_not(None),
)
_ASSIGNMENTS = select(_AMPHORAE.id, _AMPHORAE.loadbalancer_id).where(*_SERVING)


Stamp = tuple[int, int]
"""(epoch, sequence) of a heartbeat, as ``lbaas.health.freshness.HeartbeatStamp`` holds it."""

_SERVING_STAMPS = (
    select(
        _AMPHORAE.id,
        _AMPHORAE.loadbalancer_id,
        _AMPHORAE.heartbeat_epoch,
        _AMPHORAE.heartbeat_sequence,
    )
    .where(*_SERVING)
    .order_by(_AMPHORAE.id)
)
# {lock: statement}: none, waiting, skipping. SQLite renders no lock clause: its writers
# take turns.
_AMPHORA_STAMPS = {
    None: _SERVING_STAMPS,
    "wait": _SERVING_STAMPS.with_for_update(),
    "skip": _SERVING_STAMPS.with_for_update(skip_locked=True),
}


def amphora_stamps(
    conn: Connection, amphora_ids: Collection[str], lock: Literal["wait", "skip"] | None = None
) -> dict[str, tuple[str, Stamp | None]]:
    """{amphora id: (load balancer id, newest accepted stamp)} of the live ones.

    ``lock`` "wait" locks their rows; "skip" locks those no other transaction holds and
    leaves the others out (PostgreSQL's ``SKIP LOCKED``; on SQLite every live row is
    returned); None reads without locking (or waiting).
    """
    if not amphora_ids:
        return {}
    rows = conn.execute(_AMPHORA_STAMPS[lock], {"amps": sorted(amphora_ids)})
    return {
        amp: (str(lb), None if epoch is None else (int(epoch), int(sequence or 0)))
        for amp, lb, epoch, sequence in rows
    }


# Parameter names differ from the columns they set (see tests/db/test_bind_parameter_names).
_RECORD_STAMP = (
    update(table_of(AmphoraRow))
    .where(_AMPHORAE.id == bindparam("amp"))
    .values(heartbeat_epoch=bindparam("stamp_epoch"), heartbeat_sequence=bindparam("stamp_seq"))
)


def record_stamps(conn: Connection, stamps: Mapping[str, Stamp]) -> None:
    """Store the newest accepted stamp of each amphora (the caller holds the rows)."""
    if stamps:
        conn.execute(
            _RECORD_STAMP,
            [
                {"amp": amp, "stamp_epoch": epoch, "stamp_seq": sequence}
                for amp, (epoch, sequence) in sorted(stamps.items())
            ],
        )


_ACCEPTED_STAMP = select(_AMPHORAE.heartbeat_epoch, _AMPHORAE.heartbeat_sequence).where(
    _AMPHORAE.id == bindparam("amp")
)


def accepted_stamp(session: Session, amphora_id: str) -> Stamp | None:
    """The newest stamp any health manager accepted from the amphora, if any."""
    row = session.connection().execute(_ACCEPTED_STAMP, {"amp": amphora_id}).first()
    if row is None or row[0] is None:
        return None
    return int(row[0]), int(row[1] or 0)


def amphora_assignments(conn: Connection, amphora_ids: Collection[str]) -> dict[str, str]:
    """{amphora id: load balancer id} of those of ``amphora_ids`` that are not DELETED."""
    if not amphora_ids:
        return {}
    rows = conn.execute(_ASSIGNMENTS, {"amps": sorted(amphora_ids)})
    return {amp: str(lb) for amp, lb in rows}


_RECORD_HEARTBEATS = (
    update(table_of(AmphoraRow))
    .where(
        tuple_(_AMPHORAE.id, _AMPHORAE.loadbalancer_id).in_(bindparam("pairs", expanding=True)),
        _AMPHORAE.status != AmphoraStatus.DELETED.value,
    )
    .values(last_heartbeat_at=_LAST_HEARD)
)


def record_heartbeats(conn: Connection, heard: Collection[tuple[str, str]], at: float) -> None:
    """``record_heartbeat`` for many (amphora, load balancer) pairs at once, one statement.

    One time for all: the caller passes the earliest of the batch, so an amphora is
    never taken to be heard later than it was (at most one flush interval earlier).
    """
    if heard:
        conn.execute(_RECORD_HEARTBEATS, {"pairs": sorted(heard), "at": at})


_LOCK_COUNTERS_OF = (
    select(_STATS.c.amphora_id, _STATS.c.listener_id, _STATS.c.epoch, _STATS.c.base, _STATS.c.last)
    .where(_STATS.c.amphora_id.in_(bindparam("amps", expanding=True)))
    .order_by(_STATS.c.amphora_id, _STATS.c.listener_id)
    .with_for_update()
)


def lock_counters_of(conn: Connection, amphora_ids: Collection[str]) -> list[Any]:
    """(amphora_id, listener_id, epoch, base, last) of the amphorae's listeners, locked."""
    if not amphora_ids:
        return []
    return list(conn.execute(_LOCK_COUNTERS_OF, {"amps": sorted(amphora_ids)}))


def put_counter_rows(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert or replace many counter records; each row has every ``listener_stats``
    column but the integer totals, which are derived here from ``base`` and ``last``."""
    if rows:
        totalled = [{**row, **record_totals(row["base"], row["last"])} for row in rows]
        conn.execute(_PUT_COUNTERS[conn.dialect.name], totalled)


_JOB = table_of(ConvergeJobRow).c
_VERSIONS = (
    select(_LBS.id, _LBS.provisioning_status, func.coalesce(_JOB.requested_gen, -1))
    .select_from(
        table_of(LoadBalancerRow).outerjoin(
            table_of(ConvergeJobRow), _JOB.loadbalancer_id == _LBS.id
        )
    )
    .where(_LBS.id.in_(bindparam("lbs", expanding=True)))
)


def loadbalancer_versions(
    conn: Connection, loadbalancer_ids: Collection[str]
) -> dict[str, tuple[str, int]]:
    """{load balancer id: (provisioning status, requested converge generation)}.

    Every change to a load balancer's graph bumps its converge job's generation (under the
    load balancer's lock), so the pair tells whether a graph read earlier is still the one
    stored. Load balancers that no longer exist are left out.
    """
    if not loadbalancer_ids:
        return {}
    rows = conn.execute(_VERSIONS, {"lbs": sorted(loadbalancer_ids)})
    return {lb: (str(status), int(gen)) for lb, status, gen in rows}


_GENERATION = select(_JOB.requested_gen).where(_JOB.loadbalancer_id == bindparam("lb"))


def loadbalancer_is_settled_at(session: Session, loadbalancer_id: str, generation: int) -> bool:
    """``loadbalancer_is_settled`` and no change requested since ``generation`` (lock held)."""
    if not loadbalancer_is_settled(session, loadbalancer_id):
        return False
    current = session.connection().execute(_GENERATION, {"lb": loadbalancer_id}).scalar()
    return (current if current is not None else -1) == generation
