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


def build_topology(rows: DashboardRows) -> list[dict[str, Any]]:
    """Each load balancer with its listeners, pools (with members), amphorae and the error
    its last converge recorded (``None`` when the last one succeeded)."""
    listeners = _by(rows.listeners, "loadbalancer_id")
    pools = _by(rows.pools, "loadbalancer_id")
    members = _by(rows.members, "pool_id")
    amphorae = _by(rows.amphorae, "loadbalancer_id")
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
