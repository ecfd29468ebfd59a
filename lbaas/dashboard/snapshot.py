"""The dashboard's view of one scope: load balancers as trees, and listener traffic.

The topology (statuses, weights, amphorae, errors) and the traffic counters are kept
apart because they change at different rates: counters move with every request, while the
topology changes when someone acts or a health check flips. The stream sends the topology
only when it changed, and the counters on every tick, so the page can draw rates.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from lbaas.db.engine import Database
from lbaas.db.loadbalancers.scope_rows import DashboardRows, dashboard_rows


@dataclass(frozen=True)
class Snapshot:
    topology: list[dict[str, Any]]
    counters: dict[str, dict[str, int]]

    def topology_json(self) -> str:
        return json.dumps(self.topology, sort_keys=True, default=str)


def _by(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[str(row[key])].append(row)
    return grouped


def _with_details(rows: DashboardRows) -> tuple[list[dict[str, Any]], ...]:
    """Listeners with their L7 policies (by position, each with its rules), pools with
    their health monitor (``None``: unmonitored), amphorae with their host's status
    (``None``: no host recorded, or a host the fleet does not know)."""
    details = rows.details
    rules = _by(details.l7rules, "l7policy_id")
    policies = _by(
        [{**p, "rules": rules.get(p["id"], [])} for p in details.l7policies], "listener_id"
    )
    monitors = {hm["pool_id"]: hm for hm in details.healthmonitors}
    listeners = [
        {**li, "l7policies": sorted(policies.get(li["id"], []), key=lambda p: p["position"])}
        for li in rows.listeners
    ]
    pools = [{**pool, "healthmonitor": monitors.get(pool["id"])} for pool in rows.pools]
    amphorae = [
        {**amp, "host_status": details.host_status.get(amp["host"] or "")} for amp in rows.amphorae
    ]
    return listeners, pools, amphorae


def build_topology(rows: DashboardRows) -> list[dict[str, Any]]:
    """Each load balancer with its listeners (and L7 policies), pools (with members and
    health monitor), amphorae (with their host's status) and the error its last converge
    recorded (``None`` when the last one succeeded)."""
    all_listeners, all_pools, all_amphorae = _with_details(rows)
    listeners = _by(all_listeners, "loadbalancer_id")
    pools = _by(all_pools, "loadbalancer_id")
    members = _by(rows.members, "pool_id")
    amphorae = _by(all_amphorae, "loadbalancer_id")
    tree = []
    for lb in rows.loadbalancers:
        lb_pools = [{**pool, "members": members.get(pool["id"], [])} for pool in pools[lb["id"]]]
        tree.append(
            {
                **lb,
                "error": rows.errors.get(lb["id"]),
                "listeners": listeners.get(lb["id"], []),
                "pools": lb_pools,
                "amphorae": amphorae.get(lb["id"], []),
            }
        )
    return tree


def read_snapshot(database: Database, project: str | None) -> Snapshot:
    """The dashboard of ``project`` (``None``: every project) as it is in the database now."""
    with database.read_connection() as conn:
        rows = dashboard_rows(conn, project)
    return Snapshot(build_topology(rows), rows.counters)
