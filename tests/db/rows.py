"""Rows the database tests put in directly, without the API."""

from __future__ import annotations

from datetime import UTC, datetime

from lbaas.db.engine import Database
from lbaas.db.tables import LoadBalancerRow
from lbaas.model.enums import OperatingStatus, ProvisioningStatus


def add_loadbalancer(
    database: Database, lb_id: str, status: ProvisioningStatus, provider: str = "noop"
) -> None:
    """A load balancer row of project ``p``, ONLINE, in ``status``."""
    now = datetime.now(UTC).replace(tzinfo=None)
    with database.write() as session:
        session.add(
            LoadBalancerRow(
                id=lb_id,
                project_id="p",
                admin_state_up=True,
                provider=provider,
                provisioning_status=status.value,
                operating_status=OperatingStatus.ONLINE.value,
                created_at=now,
            )
        )
