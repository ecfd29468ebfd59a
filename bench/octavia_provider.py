"""POST -> ACTIVE of a load balancer through a real Octavia with lbaas as its provider,
against lbaas's API directly, and Octavia's own no-op provider; one JSON object (issue 33).

    python bench/octavia_provider.py [--trials 10] [--quick]

Starts what ``tests/e2e/octavia`` starts (``lbaas serve`` with the amphora provider and
real HAProxy on loopback VIPs; Octavia's API and driver agent on a fresh MariaDB database,
removed after). Each trial creates a load balancer and polls its GET every 20 ms until
ACTIVE, then deletes it (cascade) and waits for it to go:

- ``lbaas_direct``: POST to lbaas's API (one HAProxy started, as every variant here).
- ``octavia_lbaas``: POST to Octavia's API with ``provider: lbaas``: the driver's call to
  lbaas inside Octavia's request, lbaas's converge, then the report back through the
  driver agent's status socket (the watcher thread in Octavia's API process).
- ``octavia_amphora_noop``: POST to Octavia's API with ``provider: amphora``, Octavia's own
  amphora driver: its API casts to ``octavia-worker`` over the machine's RabbitMQ
  (127.0.0.1:5672, guest), and the worker runs its create flow (amphora record,
  certificate signed, compute create and wait, VIP plug, listeners update) against
  Octavia's no-op compute, network and amphora drivers, which answer at once: Octavia's
  own control-plane path to ACTIVE, with no VM booted and no HAProxy started.
- ``octavia_noop``: POST to Octavia's API with ``provider: noop_driver``. Octavia's no-op
  provider never reports ACTIVE, so only the POST's own latency is measured
  (``post_ms``): Octavia's API overhead without any provider work.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LBAAS_OPENSTACK_VENV", str(ROOT / ".venv-openstack"))

from tests.e2e.amphora.serve_process import running_serve  # noqa: E402
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID  # noqa: E402
from tests.support.octavia_service import running_octavia  # noqa: E402

POLL = 0.02
TIMEOUT = 120.0
PROJECT = "p-bench"


def _wait(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(POLL)


def _status(api: httpx.Client, lb_id: str) -> str:
    answer = api.get(f"/v2/lbaas/loadbalancers/{lb_id}")
    if answer.status_code == 404:
        return "GONE"
    status = str(answer.json()["loadbalancer"]["provisioning_status"])
    if status == "ERROR":  # a failed create or delete is not a figure: stop here
        raise RuntimeError(f"load balancer {lb_id} went ERROR")
    return status


def _trial(api: httpx.Client, body: dict[str, Any], until_active: bool) -> dict[str, float]:
    start = time.monotonic()
    made = api.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
    posted = time.monotonic()
    if made.status_code != 201:
        raise RuntimeError(f"create: {made.status_code} {made.text}")
    lb_id = made.json()["loadbalancer"]["id"]
    figures = {"post_ms": (posted - start) * 1000}
    if until_active:
        _wait(lambda: _status(api, lb_id) == "ACTIVE")
        figures["active_ms"] = (time.monotonic() - start) * 1000
    api.delete(f"/v2/lbaas/loadbalancers/{lb_id}?cascade=true")
    if until_active:
        _wait(lambda: _status(api, lb_id) in ("GONE", "DELETED"))
    return figures


def _summary(trials: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"trials": len(trials)}
    for key in ("post_ms", "active_ms"):
        values = sorted(t[key] for t in trials if key in t)
        if values:
            out[key] = {
                "p50": round(statistics.median(values), 1),
                "max": round(values[-1], 1),
                "min": round(values[0], 1),
            }
    return out


def run(trials: int) -> dict[str, Any]:
    with (
        running_serve(prefix="lbb-") as serve,
        running_octavia(serve.url, worker=True) as octavia,
    ):
        subnet = ipaddress.ip_network(serve.vip_subnet)
        lbaas = httpx.Client(base_url=serve.url, timeout=60)
        octa = httpx.Client(base_url=octavia.url, timeout=60)
        variants: dict[str, list[dict[str, float]]] = {
            "lbaas_direct": [],
            "octavia_lbaas": [],
            "octavia_amphora_noop": [],
            "octavia_noop": [],
        }
        for i in range(trials):
            vip = str(subnet[20 + i % 200])
            base = {"project_id": PROJECT, "vip_subnet_id": LOOPBACK_SUBNET_ID, "vip_address": vip}
            variants["lbaas_direct"].append(_trial(lbaas, dict(base), True))
            variants["octavia_lbaas"].append(_trial(octa, {**base, "provider": "lbaas"}, True))
            amphora = {**base, "provider": "amphora"}
            variants["octavia_amphora_noop"].append(_trial(octa, amphora, True))
            variants["octavia_noop"].append(
                _trial(octa, {**base, "provider": "noop_driver"}, False)
            )
        return {
            "variants": {name: _summary(t) for name, t in variants.items()},
            "load_average": os.getloadavg(),
            "note": "octavia_noop never reaches ACTIVE (Octavia's no-op provider reports "
            "nothing): post_ms only; octavia_amphora_noop boots no VM and starts no HAProxy "
            "(Octavia's no-op compute, network and amphora drivers)",
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="two trials (the smoke test)")
    args = parser.parse_args()
    print(json.dumps(run(2 if args.quick else args.trials), indent=2))


if __name__ == "__main__":
    main()
