"""Health-manager benchmark: how many heartbeats one process applies per second.

Builds N load balancers (listener, pool with a health monitor and two members) through the
API on a fresh database (each heartbeat carries the listener's, the pool's and each
member's counters, as agents send them: four counter records per amphora), gives each an amphora, then applies heartbeats to them the way
the health manager does after a datagram is authenticated: ``HeartbeatProcessor`` on the
SQL store, with the store's ``Flusher`` thread writing buffered liveness and counters
every interval as in the service, and a last flush at the end of each round counted in
that round. Rounds: the first, with cold caches (every graph is loaded, every status
changes OFFLINE → ONLINE); the steady state, where counters move and statuses do not
(median and slowest of ``--steady-rounds``); a transition where one member of every load
balancer goes down (a status write per load balancer), and one where it comes back. Wall
time and process CPU (all threads) per round; heartbeats carry their sequence numbers, so
the freshness check against the stored stamps is part of the cost. The UDP receiver and
HMAC check are not in the rounds; they are in ``flood`` (``bench/health_flood.py``): for
``--flood-seconds`` (0: none) another process sends forged datagrams as fast as it can while a
third sends every amphora's genuine heartbeat once a second to a real receiver: forged
datagrams refused per second, genuine heartbeats lost (target 0), the longest silence of
an amphora meanwhile, and the log lines the refusals cost. ``checks`` reads the database
after the rounds, before the flood (whose genuine heartbeats the kernel may drop): every
load balancer ONLINE and every listener's bytes_in equal to what the last report said. Figures go to stdout as JSON; nothing here asserts on time.

    python bench/health_manager.py [--quick] [--database-url URL] [--loadbalancers N]
        [--steady-rounds N] [--flood-seconds S]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from health_flood import flood_phase  # noqa: E402

from lbaas.api.app import create_asgi_app  # noqa: E402
from lbaas.compose import build_control_plane  # noqa: E402
from lbaas.config import Settings, load_settings  # noqa: E402
from lbaas.db.engine import Database  # noqa: E402
from lbaas.db.health import stats_repo  # noqa: E402
from lbaas.db.tables import AmphoraRow, LoadBalancerRow  # noqa: E402
from lbaas.health.flusher import DEFAULT_INTERVAL, Flusher  # noqa: E402
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor  # noqa: E402
from lbaas.health.sql_store import SqlHealthStore  # noqa: E402
from lbaas.model.enums import (  # noqa: E402
    AmphoraRole,
    AmphoraStatus,
    OperatingStatus,
    ProvisioningStatus,
)
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

# Set to a file name to profile the steady rounds (of this thread; the flusher's own
# flushes are not in it, only the one at the end of each round).
PROFILE_TO = os.environ.get("HEALTH_BENCH_PROFILE", "")
SUBNET = "7f000a00-0000-4000-8000-000000000001"
FLOOD_INTERVAL = 1.0  # seconds between genuine heartbeats of an amphora, as agents send
LB = "/v2/lbaas/loadbalancers"


def _tree_body(i: int) -> dict[str, Any]:
    members = [{"address": f"192.0.2.{10 + m}", "protocol_port": 80} for m in range(2)]
    monitor = {"type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3}
    pool: dict[str, Any] = {
        "name": "p",
        "protocol": "HTTP",
        "lb_algorithm": "ROUND_ROBIN",
        "members": members,
    }
    listener = {"protocol": "HTTP", "protocol_port": 80, "default_pool": pool}
    pool["healthmonitor"] = monitor
    return {"loadbalancer": {"name": f"hm-{i}", "vip_subnet_id": SUBNET, "listeners": [listener]}}


def report(lb: dict[str, Any], pools: dict[str, Any], seq: int, member_up: bool) -> HealthReport:
    counters = ListenerCounters(bytes_in=1000 * seq, bytes_out=4000 * seq, total_connections=seq)
    return HealthReport(
        loadbalancer_id=LoadBalancerId(lb["id"]),
        listeners={
            ListenerId(li["id"]): ListenerHealth(ListenerState.OPEN, counters)
            for li in lb["listeners"]
        },
        pools={
            PoolId(pool_id): PoolHealth(
                PoolState.UP,
                {
                    MemberId(m["id"]): MemberState.UP if member_up or i else MemberState.DOWN
                    for i, m in enumerate(members)
                },
                # As an agent sends them: the backend's and each server's traffic.
                counters=counters,
                member_counters={MemberId(m["id"]): counters for m in members},
            )
            for pool_id, members in pools.items()
        },
    )


def plane_settings(state_dir: str, database_url: str) -> Settings:
    """A control plane with the noop provider on ``database_url`` (empty: SQLite)."""
    return load_settings(
        environ={},
        overrides={
            "state_dir": state_dir,
            "database": {"url": database_url},
            "providers": {"enabled": ["noop"], "default": "noop"},
            "worker": {"poll_interval": 0.05},
            "network": {"loopback_subnet_cidr": "127.16.0.0/16"},
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--loadbalancers", type=int, default=1000)
    parser.add_argument("--steady-rounds", type=int, default=10)
    parser.add_argument("--flood-seconds", type=float, default=10.0)
    args = parser.parse_args()
    count = 5 if args.quick else args.loadbalancers
    steady_rounds = 2 if args.quick else args.steady_rounds
    with tempfile.TemporaryDirectory() as tmp:
        plane = build_control_plane(plane_settings(tmp, args.database_url))
        plane.start()
        try:
            figures = _run(plane, count, steady_rounds, 2.0 if args.quick else args.flood_seconds)
        finally:
            plane.stop()
    print(json.dumps({"database": args.database_url or "sqlite", **figures}, indent=2))


Fleet = tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, str]]
"""The load balancers as the API shows them, their pools' members, and each one's amphora."""


def build_fleet(plane: Any, count: int) -> Fleet:
    """``count`` load balancers through the API, settled, each given an amphora row; the
    worker is stopped after (from there on only the health path touches the database)."""
    with TestClient(create_asgi_app(plane.services)) as client:
        ids = [
            client.post(LB, json=_tree_body(i)).json()["loadbalancer"]["id"] for i in range(count)
        ]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            states = {lb["provisioning_status"] for lb in client.get(LB).json()["loadbalancers"]}
            if states == {ProvisioningStatus.ACTIVE.value}:
                break
            time.sleep(0.05)
        lbs = [client.get(f"{LB}/{i}").json()["loadbalancer"] for i in ids]
        pools: dict[str, dict[str, Any]] = {}
        for lb in lbs:
            pools[lb["id"]] = {
                p["id"]: client.get(f"/v2/lbaas/pools/{p['id']}/members").json()["members"]
                for p in lb["pools"]
            }
    plane.worker.stop()
    now = datetime.now(UTC).replace(tzinfo=None)
    amphorae: dict[str, str] = {}
    with plane.database.write() as session:
        for lb in lbs:
            amphorae[lb["id"]] = str(uuid.uuid4())
            session.add(
                AmphoraRow(
                    id=amphorae[lb["id"]],
                    loadbalancer_id=lb["id"],
                    status=AmphoraStatus.ALLOCATED.value,
                    role=AmphoraRole.STANDALONE.value,
                    created_at=now,
                )
            )
    return lbs, pools, amphorae


def _run(plane: Any, count: int, steady_rounds: int, flood_seconds: float) -> dict[str, Any]:
    lbs, pools, amphorae = build_fleet(plane, count)
    store = SqlHealthStore(plane.database)
    processor = HeartbeatProcessor(store)
    flusher = Flusher(store, DEFAULT_INTERVAL)  # as the service runs it, on its own thread
    flusher.start()
    last_seq = steady_rounds + 3
    flood_rounds = int(flood_seconds / FLOOD_INTERVAL)  # sent while the flood lasts
    try:
        rounds = _rounds(processor, store, lbs, pools, amphorae, steady_rounds)
        # Judged before the flood, whose genuine heartbeats the kernel may drop.
        checks = fleet_checks(plane.database, lbs, last_seq)
        beats = [
            (
                amphorae[lb["id"]],
                [
                    report(lb, pools[lb["id"]], last_seq + n, True)
                    for n in range(1, flood_rounds + 1)
                ],
            )
            for lb in lbs
        ]
        # ``--flood-seconds 0`` (or less than one interval): no flood phase at all.
        flood = None
        if flood_rounds > 0:
            flood = flood_phase(
                store,
                beats,
                seconds=flood_seconds,
                interval=FLOOD_INTERVAL,
                epoch=1,
                first_sequence=last_seq + 1,
            )
    finally:
        flusher.stop()
    return {"loadbalancers": count, **rounds, "flood": flood, "checks": checks}


def _rounds(
    processor: HeartbeatProcessor,
    store: SqlHealthStore,
    lbs: list[dict[str, Any]],
    pools: dict[str, dict[str, Any]],
    amphorae: dict[str, str],
    steady_rounds: int,
) -> dict[str, Any]:
    """Cold caches, the steady state, every load balancer degrading, and back."""

    def one_round(seq: int, member_up: bool) -> dict[str, Any]:
        outcomes: dict[str, int] = {}
        # Decoded before timing, as the receiver hands them on (decoding is not measured).
        beats = [
            (AmphoraId(amphorae[lb["id"]]), report(lb, pools[lb["id"]], seq, member_up))
            for lb in lbs
        ]
        wall, cpu = time.perf_counter(), time.process_time()
        for amphora_id, beat in beats:
            outcome = processor.process(amphora_id, 1, beat, seq)
            outcomes[outcome.value] = outcomes.get(outcome.value, 0) + 1
        store.flush()  # what the round left is part of its cost
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return {
            "heartbeats_per_s": round(len(lbs) / wall, 1),
            "cpu_ms_per_heartbeat": round(cpu * 1000 / len(lbs), 3),
            "applied": outcomes.get(HeartbeatOutcome.APPLIED.value, 0),
        }

    result: dict[str, Any] = {"first_round_cold_caches": one_round(1, True)}
    profile = cProfile.Profile() if PROFILE_TO else None
    if profile is not None:
        profile.enable()
    steady = [one_round(seq, True) for seq in range(2, steady_rounds + 2)]
    if profile is not None:
        profile.disable()
        profile.dump_stats(PROFILE_TO)
    result["steady_state"] = {
        "heartbeats_per_s_median": statistics.median(r["heartbeats_per_s"] for r in steady),
        "heartbeats_per_s_min": min(r["heartbeats_per_s"] for r in steady),
        "cpu_ms_per_heartbeat_median": statistics.median(r["cpu_ms_per_heartbeat"] for r in steady),
        "rounds": len(steady),
    }
    result["transition_one_member_down"] = one_round(steady_rounds + 2, False)
    result["transition_back_up"] = one_round(steady_rounds + 3, True)
    return result


def fleet_checks(database: Database, lbs: list[dict[str, Any]], last_seq: int) -> dict[str, Any]:
    """What the database holds at the end: every status ONLINE, every byte counted."""
    with database.read() as session:
        lb_statuses = session.execute(
            select(LoadBalancerRow.operating_status).where(
                LoadBalancerRow.id.in_([lb["id"] for lb in lbs])
            )
        ).scalars()
        totals = stats_repo.listener_totals(
            session, [li["id"] for lb in lbs for li in lb["listeners"]]
        )
    return {
        "loadbalancers_online": sum(s == OperatingStatus.ONLINE for s in lb_statuses),
        "listeners_with_all_bytes": sum(t["bytes_in"] == 1000 * last_seq for t in totals.values()),
    }


if __name__ == "__main__":
    main()
