"""Stored-tree benchmark: CPU to load one load balancer's tree, build its graph, snapshot it.

    python bench/stored_tree.py [--quick] [--database-url URL] [--rounds N]

This is the read half of every converge (``tree_loader.load_tree``,
``graph_loader.graph_from_tree``, ``status_writer.snapshot_tree``), without the provider
and the settle. Builds ten full trees (listener with an L7 policy and rule, pool with four
members and a health monitor) and ten bare load balancers (two of each with ``--quick``)
through the API on a fresh database, stops the worker, then reads each tree ``--rounds``
times per pass and prints the best pass's CPU milliseconds per tree as JSON. Nothing here
asserts on time.
``--database-url`` must name a throw-away database: the schema is created in it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.api.app import create_asgi_app  # noqa: E402
from lbaas.compose import build_control_plane  # noqa: E402
from lbaas.config import load_settings  # noqa: E402
from lbaas.db.loadbalancers import status_writer  # noqa: E402
from lbaas.db.loadbalancers.graph_loader import graph_from_tree  # noqa: E402
from lbaas.db.loadbalancers.tree_loader import load_tree  # noqa: E402

SUBNET = "7f000a00-0000-4000-8000-000000000001"
LB = "/v2/lbaas/loadbalancers"


def _full_tree(i: int) -> dict[str, Any]:
    members = [{"address": f"192.0.2.{10 + m}", "protocol_port": 80} for m in range(4)]
    monitor = {"type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3}
    pool = {"name": "p", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN", "members": members}
    pool["healthmonitor"] = monitor
    rule = {"type": "PATH", "compare_type": "STARTS_WITH", "value": "/x"}
    policy = {"action": "REJECT", "rules": [rule]}
    listener = {"protocol": "HTTP", "protocol_port": 80, "default_pool": pool}
    listener["l7policies"] = [policy]
    return {"loadbalancer": {"name": f"t-{i}", "vip_subnet_id": SUBNET, "listeners": [listener]}}


def _bare(i: int) -> dict[str, Any]:
    return {"loadbalancer": {"name": f"e-{i}", "vip_subnet_id": SUBNET}}


def _cpu_ms_per_tree(plane: Any, ids: list[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(5):
        cpu = time.process_time()
        with plane.database.read_connection() as conn:
            for _ in range(rounds):
                for lb_id in ids:
                    tree = load_tree(conn, lb_id)
                    assert tree is not None
                    graph_from_tree(conn, tree)
                    status_writer.snapshot_tree(tree)
        best = min(best, (time.process_time() - cpu) * 1000 / (rounds * len(ids)))
    return round(best, 3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    count, rounds = (2, 2) if args.quick else (10, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            environ={},
            overrides={
                "state_dir": tmp,
                "database": {"url": args.database_url},
                "providers": {"enabled": ["noop"], "default": "noop"},
                "worker": {"poll_interval": 0.05},
                "network": {"loopback_subnet_cidr": "127.16.0.0/16"},
            },
        )
        plane = build_control_plane(settings)
        plane.start()
        try:
            with TestClient(create_asgi_app(plane.services)) as client:
                full = [client.post(LB, json=_full_tree(i)).json() for i in range(count)]
                bare = [client.post(LB, json=_bare(i)).json() for i in range(count)]
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    listed = client.get(LB).json()["loadbalancers"]
                    if {lb["provisioning_status"] for lb in listed} == {"ACTIVE"}:
                        break
                    time.sleep(0.05)
            plane.worker.stop()
            figures = {
                "full_tree_cpu_ms": _cpu_ms_per_tree(
                    plane, [b["loadbalancer"]["id"] for b in full], rounds
                ),
                "bare_loadbalancer_cpu_ms": _cpu_ms_per_tree(
                    plane, [b["loadbalancer"]["id"] for b in bare], rounds
                ),
            }
        finally:
            plane.stop()
    print(json.dumps({"database": args.database_url or "sqlite", "trees": count, **figures}))


if __name__ == "__main__":
    main()
