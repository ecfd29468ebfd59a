"""The amphora object and its per-listener statistics as Octavia renders them.

An amphora runs on an agent host rather than in a Nova instance: ``compute_id`` names the
host, ``cached_zone`` is that host's availability zone (Octavia caches the instance's
compute zone there), ``cert_expiration`` is when the host agent's certificate, the
amphora's identity, expires. ``image_id`` and ``compute_flavor`` describe a Glance image
and a Nova flavor, which an amphora here has not, so they are ``null``, as Octavia's are
when its compute driver reports none; certificate rotation never holds a lock, so
``cert_busy`` is always false. The load balancer key is
``loadbalancer_id`` as Octavia's code emits it (its api-ref example says otherwise).
"""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import timestamp
from lbaas.db.counter_totals import STATS_COUNTERS
from lbaas.db.hosts import host_repo
from lbaas.db.session import Session
from lbaas.db.tables import AmphoraRow, ListenerStatsRow


def amphora_view(row: AmphoraRow, zone: str | None = None) -> dict[str, Any]:
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
        "cached_zone": zone,
        "created_at": timestamp(row.created_at),
        "updated_at": timestamp(row.updated_at),
        "image_id": None,
        "compute_flavor": None,
    }


def render_amphorae(session: Session, rows: list[AmphoraRow]) -> list[dict[str, Any]]:
    zones = host_repo.zones(session, (r.compute_id for r in rows))
    return [amphora_view(r, zones.get(r.compute_id or "")) for r in rows]


def listener_stats_view(row: ListenerStatsRow, loadbalancer_id: str | None) -> dict[str, Any]:
    """One listener as one amphora saw it; ``loadbalancer_id`` the amphora's.

    Cumulative counters are the total folded in before the last restart of the data plane
    plus the latest report; the connection gauge is only the latest. The record keeps
    both sums as integer columns (``counter_totals``).
    """
    view: dict[str, Any] = {
        "id": row.amphora_id,
        "loadbalancer_id": loadbalancer_id,
        "listener_id": row.listener_id,
    }
    for name in STATS_COUNTERS:
        view[name] = int(getattr(row, name))
    return view
