"""Which load balancers a provider carries (for providers whose health is polled)."""

from __future__ import annotations

from sqlalchemy import select

from lbaas.db.engine import Database
from lbaas.db.tables import LoadBalancerRow
from lbaas.model.enums import ProvisioningStatus


def active_loadbalancers_of(database: Database, provider: str) -> list[str]:
    """Ids of ``provider``'s load balancers that are ACTIVE (settled, not being deleted)."""
    stmt = (
        select(LoadBalancerRow.id)
        .where(
            LoadBalancerRow.provider == provider,
            LoadBalancerRow.provisioning_status == ProvisioningStatus.ACTIVE.value,
        )
        .order_by(LoadBalancerRow.id)
    )
    with database.read_connection() as conn:
        return [str(row) for row in conn.execute(stmt).scalars()]


def loadbalancer_kept(database: Database, loadbalancer_id: str) -> bool:
    """Whether the load balancer exists and is neither being deleted nor deleted."""
    gone = (ProvisioningStatus.PENDING_DELETE.value, ProvisioningStatus.DELETED.value)
    stmt = select(LoadBalancerRow.provisioning_status).where(LoadBalancerRow.id == loadbalancer_id)
    with database.read_connection() as conn:
        status = conn.execute(stmt).scalar_one_or_none()
    return status is not None and status not in gone
