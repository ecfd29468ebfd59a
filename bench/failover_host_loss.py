"""SINGLE load balancers after the loss of their host: the ``host_loss`` measurement of
``bench/failover.py`` (``--host-loss-trials N``, ``--load-balancers N``; ``--quick``: one
trial, three load balancers).

Runs a fleet on this machine (``tests/support/fleet.py``): a control plane (api, worker,
two health managers) and three loopback agents, each enrolled with ``lbaas agent enrol``
and started from its bundle, with real HAProxy. Creates load balancers (an HTTP listener
and a pool with one real backend each), spread by placement over the hosts. Each trial
loses the most loaded host (its agent and every HAProxy it started get SIGKILL) and
measures, for every load balancer that was on it, the seconds from the kill until curl
gets a 200 through its VIP again (from an amphora rebuilt on another host); the trial's
figure is the slowest of them. The host is then started again and its stale amphorae
must be removed before the next trial. Prints JSON; nothing here asserts on time.
Target (issue 11): host-loss recovery at most 5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.fleet import Fleet, curl_status, running_fleet
from tests.support.waiting import wait_until

PORT = 8080
STALE_AFTER = 3.0


def host_loss(args: argparse.Namespace) -> dict[str, Any]:
    """The ``host_loss`` measurement of ``bench/failover.py``."""
    trials, count = (1, 3) if args.quick else (args.host_loss_trials, args.load_balancers)
    # The per-load-balancer breaker would (rightly) stop the same load balancers being
    # failed over trial after trial; it is not what is measured here.
    extra = {"health": {"stale_after": STALE_AFTER, "lb_failover_limit": 0}}
    backend = HttpBackend("member")
    try:
        with running_fleet(("nova", "nova", "nova"), extra=extra) as fleet:
            with OctaviaApi(fleet.url) as api:
                return _measure(fleet, api, backend, trials, count)
    finally:
        backend.close()


def _create(api: OctaviaApi, backend: HttpBackend, name: str) -> dict[str, Any]:
    pool = {
        "name": "members",
        "protocol": "HTTP",
        "lb_algorithm": "ROUND_ROBIN",
        "members": [{"address": backend.address, "protocol_port": backend.port}],
    }
    listener = {"protocol": "HTTP", "protocol_port": PORT, "default_pool": pool}
    return api.create_loadbalancer(LOOPBACK_SUBNET, name=name, listeners=[listener])


def _host_of(api: OctaviaApi, lb_id: str) -> str | None:
    live = [a for a in api.amphorae(lb_id) if a["status"] != "DELETED"]
    return str(live[0]["compute_id"]) if len(live) == 1 else None


def _measure(
    fleet: Fleet, api: OctaviaApi, backend: HttpBackend, trials: int, count: int
) -> dict[str, Any]:
    lbs = [_create(api, backend, f"hl-{i}") for i in range(count)]
    for lb in lbs:
        wait_until(lambda lb=lb: curl_status(lb["vip_address"], PORT) == 200, 30, "VIP up")
    time.sleep(2 * STALE_AFTER)  # heartbeats established everywhere
    samples, victims_per_trial = [], []
    for _ in range(trials):
        placed = {lb["id"]: _host_of(api, lb["id"]) for lb in lbs}
        loads = {h: list(placed.values()).count(h) for h in fleet.hosts}
        lost = max(sorted(loads), key=lambda h: loads[h])
        victims = [lb for lb in lbs if placed[lb["id"]] == lost]
        killed_at = time.monotonic()
        fleet.kill_host(fleet.hosts[lost])
        pending = {lb["vip_address"] for lb in victims}
        slowest = 0.0
        deadline = killed_at + 120
        while pending and time.monotonic() < deadline:
            for vip in sorted(pending):
                if curl_status(vip, PORT) == 200:
                    pending.discard(vip)
                    slowest = time.monotonic() - killed_at
            time.sleep(0.05)
        if pending:
            raise SystemExit(f"not serving again after 120 s: {sorted(pending)}")
        samples.append(round(slowest, 2))
        victims_per_trial.append(len(victims))
        _bring_back(fleet, lost)
    return {
        "hosts": len(fleet.hosts),
        "load_balancers": count,
        "stale_after_s": STALE_AFTER,
        "heartbeat_interval_s": 0.5,
        "trials": trials,
        "load_balancers_lost_per_trial": victims_per_trial,
        "host_loss_recovery_s": {
            "p50": statistics.median(samples),
            "max": max(samples),
            "samples": samples,
        },
        "target_s": 5.0,
        "load_average": os.getloadavg()[0],
    }


def _bring_back(fleet: Fleet, host_id: str) -> None:
    """Restart the lost host and wait until it is UP with no stale amphora left."""
    host = fleet.hosts[host_id]
    fleet.start_agent(host)
    wait_until(lambda: fleet.host_list()[host_id]["status"] == "UP", 60, f"{host_id} UP")
    wait_until(
        lambda: not any((host.state_dir / "amphorae").glob("*/applied.json")),
        60,
        f"{host_id}'s stale amphorae removed",
    )
