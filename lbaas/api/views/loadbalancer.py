"""The load balancer object as Octavia renders it."""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import ids, lifecycle, ownership, text
from lbaas.db import queries
from lbaas.db.listing import tags_of
from lbaas.db.session import Session
from lbaas.db.tables import ListenerRow, LoadBalancerRow, PoolRow


def loadbalancer_view(
    row: LoadBalancerRow, listener_ids: list[str], pool_ids: list[str], tags: list[str]
) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": text(row.name),
        "description": text(row.description),
        "admin_state_up": row.admin_state_up,
        **ownership(row),
        **lifecycle(row),
        "vip_address": row.vip_address,
        "vip_port_id": row.vip_port_id,
        "vip_subnet_id": row.vip_subnet_id,
        "vip_network_id": row.vip_network_id,
        "vip_qos_policy_id": row.vip_qos_policy_id,
        "vip_sg_ids": list(row.vip_sg_ids or []),
        "vip_vnic_type": "normal",
        "additional_vips": list(row.additional_vips or []),
        "listeners": ids(listener_ids),
        "pools": ids(pool_ids),
        "provider": row.provider or "octavia",
        "flavor_id": row.flavor_id,
        "availability_zone": row.availability_zone,
        "tags": tags,
    }


def render_loadbalancers(session: Session, rows: list[LoadBalancerRow]) -> list[dict[str, Any]]:
    """Views of many load balancers with a fixed number of queries."""
    lb_ids = [r.id for r in rows]
    live = ("PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE", "ACTIVE", "ERROR")
    listeners = queries.children_ids(
        session,
        ListenerRow.id,
        ListenerRow.loadbalancer_id,
        lb_ids,
        ListenerRow.provisioning_status.in_(live),
    )
    pools = queries.children_ids(
        session, PoolRow.id, PoolRow.loadbalancer_id, lb_ids, PoolRow.provisioning_status.in_(live)
    )
    tags = tags_of(session, lb_ids)
    return [loadbalancer_view(r, listeners[r.id], pools[r.id], tags[r.id]) for r in rows]
