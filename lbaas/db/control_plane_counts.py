"""The control plane's state in numbers, for ``/metrics``: what an operator alerts on.

Counted in the database, so every API process reports the same figures whatever process
did the work: load balancers and amphorae by status, and the converge queue — how many
jobs wait, run or back off, and how long the oldest waiting one has been runnable without
a worker taking it (the number that says the workers are not keeping up) — and how many
amphorae, and agent hosts, were heard from recently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlalchemy.engine import Connection

from lbaas.db.tables import AmphoraRow, ConvergeJobRow, LoadBalancerRow, table_of

_LBS = table_of(LoadBalancerRow).c
_AMPHORAE = table_of(AmphoraRow).c
_JOBS = table_of(ConvergeJobRow).c


@dataclass(frozen=True)
class ControlPlaneCounts:
    loadbalancers: dict[str, int]
    amphorae: dict[str, int]
    jobs: dict[str, int]
    oldest_queued_seconds: float
    amphorae_heard: int
    """Amphorae whose last heartbeat is newer than the ``heard_since`` given."""
    hosts_heard: int
    """Distinct agent hosts of those amphorae: an agent that sends heartbeats is up."""


def _by(conn: Connection, column: Any, table: Any) -> dict[str, int]:
    rows = conn.execute(select(column, func.count()).select_from(table).group_by(column))
    return {str(status): int(count) for status, count in rows}


def _heard(conn: Connection, since: float) -> tuple[int, int]:
    row = conn.execute(
        select(func.count(), func.count(func.distinct(_AMPHORAE.host))).where(
            _AMPHORAE.last_heartbeat_at >= since
        )
    ).one()
    return int(row[0]), int(row[1])


def control_plane_counts(
    conn: Connection, now: float, heard_since: float | None = None
) -> ControlPlaneCounts:
    """``heard_since``: the time a heartbeat must be newer than to count an amphora (and
    its host) as heard; by default ``now`` minus an hour."""
    pending = _JOBS.requested_gen > _JOBS.done_gen
    leased = and_(_JOBS.lease_owner.is_not(None), _JOBS.lease_expires_at >= now)
    runnable = and_(pending, ~leased, _JOBS.next_attempt_at <= now)
    state = case(
        (leased, "running"),
        (runnable, "queued"),
        (pending, "backing_off"),
        else_="idle",
    )
    jobs = _by(conn, state.label("state"), table_of(ConvergeJobRow))
    oldest = conn.execute(select(func.min(_JOBS.next_attempt_at)).where(runnable)).scalar()
    amphorae_heard, hosts_heard = _heard(conn, now - 3600 if heard_since is None else heard_since)
    return ControlPlaneCounts(
        loadbalancers=_by(conn, _LBS.provisioning_status, table_of(LoadBalancerRow)),
        amphorae=_by(conn, _AMPHORAE.status, table_of(AmphoraRow)),
        jobs={s: jobs.get(s, 0) for s in ("queued", "running", "backing_off")},
        oldest_queued_seconds=max(0.0, now - float(oldest)) if oldest is not None else 0.0,
        amphorae_heard=amphorae_heard,
        hosts_heard=hosts_heard,
    )
