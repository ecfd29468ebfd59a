"""A stalled agent is not a dead data plane: failover with and without HAProxy, measured.

    python bench/agent_stall.py [--quick] [--stall-seconds S]

Runs the parts as separate processes on one state directory (``lbaas db upgrade``, then
``lbaas api``, ``lbaas worker``, ``lbaas health`` and ``lbaas agent``, the amphora
provider in loopback mode, real HAProxy), creates a load balancer with an HTTP listener
(no pool: HAProxy itself answers 503, which is all the data plane has to do here), then:

1. ``agent_only``: the agent is stopped with SIGSTOP for ``--stall-seconds`` (30 by
   default, as in the report of issue 10) while HAProxy keeps serving. Sampled every
   0.2 s: whether the VIP answers, whether a failover was requested (the load balancer
   leaves ACTIVE) and the amphora's id. Target: no failover, the VIP answers throughout.
2. ``agent_and_haproxy``: the agent is stopped again and HAProxy is killed (SIGKILL):
   seconds from the kill until the failover is requested (the load balancer leaves ACTIVE),
   then, with the agent resumed, until the VIP answers again from a new amphora.

``--no-probe`` turns the data-plane probe off (``health.probe_timeout`` 0), which is how
the health manager behaved before: case 1 then shows the needless failover. Prints JSON;
nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import http.client  # noqa: E402

from tests.e2e.amphora.octavia_api import OctaviaApi  # noqa: E402
from tests.e2e.amphora.serve_process import kill_haproxies_under, serve_settings  # noqa: E402
from tests.e2e.amphora.traffic import request  # noqa: E402
from tests.support.api_client import LOOPBACK_SUBNET  # noqa: E402
from tests.support.processes import lbaas_env, lbaas_process  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402

STALE_AFTER = 3.0
PORT = 8080


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a short stall (smoke test)")
    parser.add_argument("--stall-seconds", type=float, default=30.0)
    parser.add_argument(
        "--no-probe", action="store_true", help="health.probe_timeout 0: silence alone fails over"
    )
    args = parser.parse_args()
    stall = 3 * STALE_AFTER if args.quick else args.stall_seconds
    with tempfile.TemporaryDirectory(prefix="lbst-", dir="/tmp") as tmp:
        state = Path(tmp)
        health = {"stale_after": STALE_AFTER, **({"probe_timeout": 0} if args.no_probe else {})}
        settings = serve_settings(state, {"health": health})
        env = lbaas_env(settings)
        upgrade = [sys.executable, "-m", "lbaas.cli", "db", "upgrade"]
        subprocess.run(upgrade, env=env, check=True, capture_output=True)  # stdout is the JSON
        with ExitStack() as stack:
            procs = {
                name: stack.enter_context(lbaas_process([name], env, state / f"{name}.log"))
                for name in ("agent", "health", "worker", "api")
            }
            try:
                figures = _measure(settings, state, procs["agent"].pid, stall)
            finally:
                os.kill(procs["agent"].pid, signal.SIGCONT)
                kill_haproxies_under(state)
    figures = {"stale_after_s": STALE_AFTER, "probe": not args.no_probe, **figures}
    print(json.dumps(figures, indent=2))


def _measure(settings: dict[str, Any], state: Path, agent: int, stall: float) -> dict[str, Any]:
    url = f"http://127.0.0.1:{settings['api']['port']}"
    wait_until(lambda: _up(url), 60, "the API to answer")
    with OctaviaApi(url) as api:
        lb = api.create_loadbalancer(LOOPBACK_SUBNET)
        api.create_listener(lb["id"], "HTTP", PORT)
        api.wait_active(lb["id"])
        vip = lb["vip_address"]
        wait_until(lambda: answers(vip, PORT), 30, "the VIP to answer")
        time.sleep(2 * STALE_AFTER)  # heartbeats established
        first = _amphora_ids(api, lb["id"])
        agent_only = _stall(api, lb["id"], vip, agent, stall)
        agent_only["amphora_replaced"] = _amphora_ids(api, lb["id"]) != first
        both = _stall_and_kill(api, lb["id"], vip, agent, state)
        both["amphora_replaced"] = _amphora_ids(api, lb["id"]) != first
    return {"agent_only": agent_only, "agent_and_haproxy": both}


def _stall(api: OctaviaApi, lb_id: str, vip: str, agent: int, stall: float) -> dict[str, Any]:
    samples = failovers = unanswered = 0
    os.kill(agent, signal.SIGSTOP)
    end = time.monotonic() + stall
    try:
        while time.monotonic() < end:
            samples += 1
            unanswered += not answers(vip, PORT)
            failovers += api.loadbalancer(lb_id)["provisioning_status"] != "ACTIVE"
            time.sleep(0.2)
    finally:
        os.kill(agent, signal.SIGCONT)
    time.sleep(2 * STALE_AFTER)  # heartbeats again before the next case
    return {
        "stall_s": stall,
        "samples": samples,
        "samples_with_failover_requested": failovers,
        "samples_vip_unanswered": unanswered,
    }


def _stall_and_kill(
    api: OctaviaApi, lb_id: str, vip: str, agent: int, state: Path
) -> dict[str, Any]:
    os.kill(agent, signal.SIGSTOP)
    killed_at = time.monotonic()
    kill_haproxies_under(state)
    try:
        wait_until(
            lambda: api.loadbalancer(lb_id)["provisioning_status"] != "ACTIVE",
            120,
            "the failover to be requested",
        )
        requested = time.monotonic() - killed_at
    finally:
        os.kill(agent, signal.SIGCONT)
    api.wait_active(lb_id, timeout=120)
    wait_until(lambda: answers(vip, PORT), 60, "the VIP to answer again")
    return {
        "seconds_to_failover_requested": round(requested, 2),
        "seconds_to_serving_again": round(time.monotonic() - killed_at, 2),
    }


def answers(vip: str, port: int) -> bool:
    """Whether HAProxy answers on the VIP at all (503 included: there is no pool)."""
    try:
        return request(vip, port, "/", timeout=2).status > 0
    except (OSError, http.client.HTTPException):
        return False


def _amphora_ids(api: OctaviaApi, lb_id: str) -> set[str]:
    return {str(a["id"]) for a in api.amphorae(lb_id) if a["status"] != "DELETED"}


def _up(url: str) -> bool:
    try:
        with OctaviaApi(url, timeout=1) as api:
            api.get("/")
        return True
    except Exception:  # noqa: BLE001 - not up yet, whatever the reason
        return False


if __name__ == "__main__":
    main()
