"""The ``/status`` tree, in the shape Octavia's code returns (not the api-ref example).

Listeners list the pools they send traffic to — the default pool and the redirect pools of
enabled L7 policies that have rules — each with its health monitor (``null`` when there is none, as Octavia
sends it) and members.
"""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import text
from lbaas.db.loadbalancers.stored_tree import (
    StoredHealthMonitor,
    StoredListener,
    StoredLoadBalancer,
    StoredMember,
    StoredPool,
)


def _status(
    row: StoredLoadBalancer | StoredListener | StoredPool | StoredMember | StoredHealthMonitor,
) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": text(row.name),
        "provisioning_status": row.provisioning_status,
        "operating_status": row.operating_status,
    }


def _pool(pool: StoredPool) -> dict[str, Any]:
    out = _status(pool)
    hm = pool.health_monitor
    # Octavia's status type always has the attribute: ``null`` for a pool without one.
    out["health_monitor"] = None if hm is None else {**_status(hm), "type": hm.type}
    out["members"] = [
        {**_status(m), "address": m.address, "protocol_port": m.protocol_port} for m in pool.members
    ]
    return out


def _listener_pools(listener: StoredListener, pools: dict[str, StoredPool]) -> list[StoredPool]:
    ids: list[str] = []
    if listener.default_pool_id:
        ids.append(listener.default_pool_id)
    for policy in listener.l7policies:
        target = policy.redirect_pool_id
        if policy.admin_state_up and policy.rules and target and target not in ids:
            ids.append(target)
    return [pools[i] for i in ids if i in pools]


def status_tree(lb: StoredLoadBalancer) -> dict[str, Any]:
    pools = {p.id: p for p in lb.pools}
    return {
        **_status(lb),
        "listeners": [
            {**_status(li), "pools": [_pool(p) for p in _listener_pools(li, pools)]}
            for li in lb.listeners
        ],
    }
