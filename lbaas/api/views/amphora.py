"""The amphora object and its per-listener statistics as Octavia renders them.

Fields that describe Nova resources lbaas does not use (image, compute flavor, cached
zone) are always ``null``, and certificate rotation never holds a lock, so ``cert_busy``
is always false; they are kept because clients read them. The load balancer key is
``loadbalancer_id`` as Octavia's code emits it (its api-ref example says otherwise).
"""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import timestamp
from lbaas.db.tables import AmphoraRow, ListenerStatsRow

COUNTERS = ("active_connections", "bytes_in", "bytes_out", "request_errors", "total_connections")


def amphora_view(row: AmphoraRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "loadbalancer_id": row.loadbalancer_id,
        "compute_id": row.compute_id,
        "lb_network_ip": row.lb_network_ip,
        "vrrp_ip": row.vrrp_ip,
        "ha_ip": row.ha_ip,
        "vrrp_port_id": row.vrrp_port_id,
        "ha_port_id": row.ha_port_id,
        "cert_expiration": timestamp(row.cert_expiration),
        "cert_busy": False,
        "role": row.role,
        "status": row.status,
        "vrrp_interface": row.vrrp_interface,
        "vrrp_id": row.vrrp_id,
        "vrrp_priority": row.vrrp_priority,
        "cached_zone": None,
        "created_at": timestamp(row.created_at),
        "updated_at": timestamp(row.updated_at),
        "image_id": None,
        "compute_flavor": None,
    }


def render_amphorae(_session: object, rows: list[AmphoraRow]) -> list[dict[str, Any]]:
    return [amphora_view(r) for r in rows]


def listener_stats_view(row: ListenerStatsRow) -> dict[str, Any]:
    """One listener as one amphora saw it.

    Cumulative counters are the total folded in before the last restart of the data plane
    (``base``) plus the latest report (``last``); the connection gauge is only the latest.
    """
    view: dict[str, Any] = {
        "id": row.amphora_id,
        "loadbalancer_id": row.loadbalancer_id,
        "listener_id": row.listener_id,
    }
    for name in COUNTERS:
        last = int(row.last.get(name, 0))
        view[name] = last if name == "active_connections" else int(row.base.get(name, 0)) + last
    return view
