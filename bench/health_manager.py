"""Health-manager benchmark: how many heartbeats one process applies per second.

    python bench/health_manager.py [--quick] [--database-url URL] [--loadbalancers N]

Builds N load balancers (listener, pool with a health monitor and two members) through the
API on a fresh database, gives each an amphora, then applies heartbeats to them the way
the health manager does after a datagram is authenticated (``HeartbeatProcessor`` on the
SQL store): liveness, listener counters, operating statuses. The first round changes every
status (OFFLINE → ONLINE); later rounds are the steady state, where counters move and
statuses do not. The UDP receiver and HMAC check are not included (they cost microseconds).
Figures go to stdout as JSON; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.api.app import create_asgi_app  # noqa: E402
from lbaas.compose import build_control_plane  # noqa: E402
from lbaas.config import load_settings  # noqa: E402
from lbaas.db.tables import AmphoraRow  # noqa: E402
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor  # noqa: E402
from lbaas.health.sql_store import SqlHealthStore  # noqa: E402
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId, MemberId, PoolId  # noqa: E402
from lbaas.model.health import (  # noqa: E402
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)

SUBNET = "7f000a00-0000-4000-8000-000000000001"
LB = "/v2/lbaas/loadbalancers"


def _tree_body(i: int) -> dict[str, Any]:
    members = [{"address": f"192.0.2.{10 + m}", "protocol_port": 80} for m in range(2)]
    monitor = {"type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3}
    pool = {"name": "p", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN", "members": members}
    listener = {"protocol": "HTTP", "protocol_port": 80, "default_pool": pool}
    pool["healthmonitor"] = monitor
    return {"loadbalancer": {"name": f"hm-{i}", "vip_subnet_id": SUBNET, "listeners": [listener]}}


def _report(lb: dict[str, Any], pools: dict[str, Any], seq: int) -> HealthReport:
    counters = ListenerCounters(bytes_in=1000 * seq, bytes_out=4000 * seq, total_connections=seq)
    return HealthReport(
        loadbalancer_id=LoadBalancerId(lb["id"]),
        listeners={
            ListenerId(li["id"]): ListenerHealth(ListenerState.OPEN, counters)
            for li in lb["listeners"]
        },
        pools={
            PoolId(pool_id): PoolHealth(
                PoolState.UP, {MemberId(m["id"]): MemberState.UP for m in members}
            )
            for pool_id, members in pools.items()
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--loadbalancers", type=int, default=200)
    args = parser.parse_args()
    count = 5 if args.quick else args.loadbalancers
    rounds = 2 if args.quick else 5
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
            figures = _run(plane, count, rounds)
        finally:
            plane.stop()
    print(json.dumps({"database": args.database_url or "sqlite", **figures}, indent=2))


def _run(plane: Any, count: int, rounds: int) -> dict[str, Any]:
    with TestClient(create_asgi_app(plane.services)) as client:
        ids = [
            client.post(LB, json=_tree_body(i)).json()["loadbalancer"]["id"] for i in range(count)
        ]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            states = {lb["provisioning_status"] for lb in client.get(LB).json()["loadbalancers"]}
            if states == {"ACTIVE"}:
                break
            time.sleep(0.05)
        lbs = [client.get(f"{LB}/{i}").json()["loadbalancer"] for i in ids]
        pools: dict[str, dict[str, Any]] = {}
        for lb in lbs:
            pools[lb["id"]] = {
                p["id"]: client.get(f"/v2/lbaas/pools/{p['id']}/members").json()["members"]
                for p in lb["pools"]
            }
    plane.worker.stop()  # from here on only the health path touches the database
    now = datetime.now(UTC).replace(tzinfo=None)
    amphorae: dict[str, str] = {}
    with plane.database.write() as session:
        for lb in lbs:
            amphorae[lb["id"]] = str(uuid.uuid4())
            session.add(
                AmphoraRow(
                    id=amphorae[lb["id"]],
                    loadbalancer_id=lb["id"],
                    status="ALLOCATED",
                    role="STANDALONE",
                    created_at=now,
                )
            )
    processor = HeartbeatProcessor(SqlHealthStore(plane.database))
    result: dict[str, Any] = {"loadbalancers": count}
    for seq in range(1, rounds + 1):
        outcomes: dict[str, int] = {}
        wall, cpu = time.perf_counter(), time.process_time()
        for lb in lbs:
            report = _report(lb, pools[lb["id"]], seq)
            outcome = processor.process(AmphoraId(amphorae[lb["id"]]), 1, report)
            outcomes[outcome.value] = outcomes.get(outcome.value, 0) + 1
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        name = "first_round_statuses_change" if seq == 1 else "steady_state"
        if seq == 1 or seq == rounds:
            result[name] = {
                "heartbeats_per_s": round(count / wall, 1),
                "cpu_ms_per_heartbeat": round(cpu * 1000 / count, 2),
                "applied": outcomes.get(HeartbeatOutcome.APPLIED.value, 0),
            }
    return result


if __name__ == "__main__":
    main()
