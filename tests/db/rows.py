"""Rows the database tests put in directly, without the API."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lbaas.db.engine import Database
from lbaas.db.tables import LoadBalancerRow
from lbaas.model.enums import OperatingStatus, ProvisioningStatus


def add_loadbalancer(
    database: Database,
    lb_id: str,
    status: ProvisioningStatus,
    provider: str = "noop",
    **columns: Any,
) -> None:
    """A load balancer row of project ``p``, ONLINE, in ``status``; ``columns`` set or
    override any other column (``topology``, ``created_at``, ...)."""
    values: dict[str, Any] = {
        "created_at": datetime.now(UTC).replace(tzinfo=None),
        **columns,
    }
    with database.write() as session:
        session.add(
            LoadBalancerRow(
                id=lb_id,
                project_id="p",
                admin_state_up=True,
                provider=provider,
                provisioning_status=status.value,
                operating_status=OperatingStatus.ONLINE.value,
                **values,
            )
        )
