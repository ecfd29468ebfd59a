"""Half pairs queued again when a host comes UP.

An ACTIVE_STANDBY load balancer whose lost amphora could not be rebuilt (its peer's host
was the only other one, and it was down) is left serving on the survivor alone
(``PairConverger._complete``). Its peer can be built as soon as a host can take it, so
when a host goes from DOWN (or never heard) to UP, every ACTIVE load balancer of that
topology with fewer than two live amphorae is queued for a converge, which adds the
missing member. The periodic resync would get there too, a minute later.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from lbaas.db.jobs import job_queue
from lbaas.db.tables import AmphoraRow, LoadBalancerRow
from lbaas.model.enums import LIVE_AMPHORA_STATUSES, ProvisioningStatus, Topology

_LIVE = [status.value for status in LIVE_AMPHORA_STATUSES]


def half_pairs(session: Session) -> list[str]:
    """ACTIVE, ACTIVE_STANDBY load balancers with fewer than two live amphorae."""
    live = (
        select(func.count())
        .where(AmphoraRow.loadbalancer_id == LoadBalancerRow.id, AmphoraRow.status.in_(_LIVE))
        .scalar_subquery()
    )
    query = select(LoadBalancerRow.id).where(
        LoadBalancerRow.topology == Topology.ACTIVE_STANDBY.value,
        LoadBalancerRow.provisioning_status == ProvisioningStatus.ACTIVE.value,
        live < 2,
    )
    return list(session.scalars(query.order_by(LoadBalancerRow.id)))


def queue_half_pairs(session: Session, now: float) -> list[str]:
    """Queue a converge of every half pair; their ids."""
    found = half_pairs(session)
    for loadbalancer_id in found:
        job_queue.enqueue_converge(session, loadbalancer_id, now)
    return found
