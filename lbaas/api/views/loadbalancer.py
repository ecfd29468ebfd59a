"""The load balancer object as Octavia renders it."""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import described_object, ids, json_value
from lbaas.db.loadbalancers import loadbalancer_repo
from lbaas.db.session import Session
from lbaas.db.tables import LoadBalancerRow


def loadbalancer_view(
    row: LoadBalancerRow, listener_ids: list[str], pool_ids: list[str], tags: list[str]
) -> dict[str, Any]:
    return {
        **described_object(row),
        "vip_address": row.vip_address,
        "vip_port_id": row.vip_port_id,
        "vip_subnet_id": row.vip_subnet_id,
        "vip_network_id": row.vip_network_id,
        "vip_qos_policy_id": row.vip_qos_policy_id,
        "vip_sg_ids": list(json_value(row.vip_sg_ids, [])),
        "vip_vnic_type": "normal",
        "additional_vips": list(json_value(row.additional_vips, [])),
        "listeners": ids(listener_ids),
        "pools": ids(pool_ids),
        "provider": row.provider or "octavia",
        "flavor_id": row.flavor_id,
        "availability_zone": row.availability_zone,
        "tags": tags,
    }


def render_loadbalancers(session: Session, rows: list[LoadBalancerRow]) -> list[dict[str, Any]]:
    """Views of many load balancers with one query for their children and tags."""
    children = loadbalancer_repo.loadbalancer_children(session, [r.id for r in rows])
    listeners, pools, tags = children.listeners, children.pools, children.tags
    return [loadbalancer_view(r, listeners[r.id], pools[r.id], tags[r.id]) for r in rows]
