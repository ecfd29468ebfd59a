"""The versions a resync checks instead of converging (``lbaas.jobs.resync_check``).

A converge whose provider reports the version it sent (``ApplyResult.version``) keeps it
on the job row. The resync reads the settled ACTIVE load balancers that are due and have
one, asks their providers which of them every data plane still holds at that version, and
marks those checked (``updated_at`` moves on, as a converge would; no generation changes),
so the converge share of the resync then skips them. One statement each way, whatever
the number of load balancers.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from lbaas.db.engine import Database
from lbaas.db.tables import ConvergeJobRow, LoadBalancerRow, table_of
from lbaas.model.enums import ProvisioningStatus

_TABLE = table_of(ConvergeJobRow)
_JOBS = _TABLE.c
_LBS = table_of(LoadBalancerRow).c

_RECORD = (
    update(_TABLE)
    .where(_JOBS.loadbalancer_id == bindparam("lb"))
    .values(applied_version=bindparam("version"))
)


def record_applied_version(session: Session, loadbalancer_id: str, version: int | None) -> None:
    """Keep what a converge sent, in its settling transaction (None: nothing to check)."""
    session.connection().execute(_RECORD, {"lb": loadbalancer_id, "version": version})


def due_with_versions(
    db: Database, now: float, interval: float, limit: int
) -> dict[str, dict[str, int]]:
    """Per provider name, {load balancer id: applied version} of the ACTIVE load balancers
    with nothing outstanding whose last converge or check is ``interval`` seconds old or
    more and that have a version, oldest first, at most ``limit`` in all."""
    query = (
        select(_JOBS.loadbalancer_id, _LBS.provider, _JOBS.applied_version)
        .join_from(ConvergeJobRow, LoadBalancerRow, _LBS.id == _JOBS.loadbalancer_id)
        .where(
            _LBS.provisioning_status == ProvisioningStatus.ACTIVE.value,
            _JOBS.requested_gen <= _JOBS.done_gen,
            _JOBS.applied_version.is_not(None),
            _JOBS.updated_at <= now - interval,
        )
        .order_by(_JOBS.updated_at, _JOBS.loadbalancer_id)
        .limit(limit)
    )
    found: dict[str, dict[str, int]] = defaultdict(dict)
    with db.read_connection() as conn:
        for lb_id, provider, version in conn.execute(query):
            found[str(provider)][str(lb_id)] = int(version)
    return dict(found)


def mark_checked(db: Database, checked: dict[str, int], now: float) -> None:
    """Move ``updated_at`` of each checked load balancer to ``now``, where nothing was
    asked of it meanwhile and the version is still the one checked (a converge that
    settled since wrote its own)."""
    if not checked:
        return
    statement = (
        update(_TABLE)
        .where(
            _JOBS.loadbalancer_id == bindparam("lb"),
            _JOBS.applied_version == bindparam("version"),
            _JOBS.requested_gen <= _JOBS.done_gen,
        )
        .values(updated_at=now)
    )
    with db.write() as session:
        session.connection().execute(
            statement, [{"lb": lb, "version": v} for lb, v in checked.items()]
        )
