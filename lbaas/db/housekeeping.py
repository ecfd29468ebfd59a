"""Purging what deletions leave behind, once it has been kept long enough.

A deleted load balancer's tree, ports, tags and counters go with its final converge, but
its row stays as a ``DELETED`` stub (invisible to the API, useful to an operator asking
what happened to an id), together with its converge job row; an amphora retired by a
failover or a deletion stays as a ``DELETED`` row too. Left alone, both tables only grow.
Octavia's housekeeping purges such records after a week by default; so does this.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, exists, func, select

from lbaas.db.engine import Database
from lbaas.db.tables import AmphoraRow, ConvergeJobRow, LoadBalancerRow, table_of
from lbaas.model.enums import AmphoraStatus, ProvisioningStatus

_LBS = table_of(LoadBalancerRow).c
_JOBS = table_of(ConvergeJobRow).c
_AMPHORAE = table_of(AmphoraRow).c


@dataclass(frozen=True)
class Purged:
    loadbalancers: int
    amphorae: int


def purge_deleted(db: Database, deleted_before: datetime) -> Purged:
    """Remove ``DELETED`` load balancers and amphorae last changed before the cutoff."""
    expired = select(_LBS.id).where(
        _LBS.provisioning_status == ProvisioningStatus.DELETED.value,
        func.coalesce(_LBS.updated_at, _LBS.created_at) < deleted_before,
    )
    with db.write_connection() as conn:
        # A job row still leased or asking for work belongs to a converge in flight: its
        # load balancer waits for the next round.
        conn.execute(
            delete(table_of(ConvergeJobRow)).where(
                _JOBS.loadbalancer_id.in_(expired),
                _JOBS.lease_owner.is_(None),
                _JOBS.requested_gen <= _JOBS.done_gen,
            )
        )
        has_job = exists().where(_JOBS.loadbalancer_id == _LBS.id)
        loadbalancers = conn.execute(
            delete(table_of(LoadBalancerRow)).where(_LBS.id.in_(expired), ~has_job)
        ).rowcount
        amphorae = conn.execute(
            delete(table_of(AmphoraRow)).where(
                _AMPHORAE.status == AmphoraStatus.DELETED.value,
                func.coalesce(_AMPHORAE.updated_at, _AMPHORAE.created_at) < deleted_before,
            )
        ).rowcount
    return Purged(int(loadbalancers), int(amphorae))
