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
