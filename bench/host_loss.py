"""Host loss in the lab: how long a lost host's load balancers go unserved (root).

    sudo python bench/host_loss.py [--trials 5] [--name NAME] [--spares N] [--quick]

A 3-host lab (``tests.support.lab_pair.lab_world``: ``lbaas lab``'s namespaces, its control
plane, an enrolled netns agent per host, members on the router so that no member is lost
with a host). A client in the lab's client namespace sends a request every 10 ms through
the VIP, each on a new connection, 0.5 s timeout; the outage is read from its record.

- ``single`` (``--trials`` of them): a new SINGLE load balancer each trial (the per-load-
  balancer failover breaker would stop the same one being failed over trial after trial);
  its host is lost (``Lab.host_down``: frozen, cut, killed at one instant). Recorded: from
  the loss until the first request served again (by an amphora rebuilt on another host),
  and the lab's own measurement of the loss. The host is then brought back (links up, its
  agent started) and must be UP with its leftover amphora removed before the next trial.
- ``active_standby`` (one, skipped by ``--quick``): an ACTIVE_STANDBY pair; its MASTER's
  host is lost. Recorded: from the loss until the first request served after it failed
  (the BACKUP's keepalived takes the VIP).

- ``control_plane`` (one, skipped by ``--quick``; a lab of its own, ``up --control 3``): the
  control host leading housekeeping is lost while a client in the lab's client namespace
  changes 20 noop load balancers through the other two (``tests/e2e/lab/control_loss.py``).
  Recorded: the calls and failed calls, the longest gap between two answers, the longest
  change from PUT to ACTIVE, and how long until every singleton was led again.

``--spares N`` gives every agent ``agent.spare_amphorae = N`` (issue 35), so a rebuild
lands on a host with a spare ready. ``--quick`` runs one SINGLE trial (the smoke test's). Prints JSON, with the machine's load
average before and after; nothing here asserts on time. Targets (issue 29): SINGLE p50 <=
3 s and max <= 5 s; ACTIVE_STANDBY sub-second.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.amphora.spare_slot import SPARE_NAMESPACE  # noqa: E402
from lbaas.lab.lab import Lab  # noqa: E402
from lbaas.lab.services import start_agent, start_services  # noqa: E402
from lbaas.model.enums import AmphoraRole, HostStatus  # noqa: E402
from tests.e2e.lab.control_loss import lose_control_host  # noqa: E402
from tests.e2e.lab.lab_api import V2, host_list  # noqa: E402
from tests.support.lab_pair import (  # noqa: E402
    LabWorld,
    NamespaceLoopingClient,
    create_pair,
    create_single,
    lab_world,
    live_amphorae,
    vip_of,
)
from tests.support.vrrp_pair import LoopingClient  # noqa: E402

TIMEOUT = 120.0
REQUEST_EVERY = 0.01
REQUEST_TIMEOUT = 0.5

# The client's loop, run in the lab's client namespace: a request every REQUEST_EVERY on
# a new connection, each in its own thread, so that a request hanging on a dead VIP does
# not hold back the next (a sequential loop sees a failing VIP every timeout, not every
# 10 ms). One line per request: start, end (CLOCK_MONOTONIC, shared by every process),
# and the body or "".
_LOOP = r"""
import http.client, sys, threading, time
address, timeout, pause, limit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
lock = threading.Lock()
def one():
    started, body = time.monotonic(), ""
    connection = http.client.HTTPConnection(address, 80, timeout=timeout)
    try:
        connection.request("GET", "/", headers={"Connection": "close"})
        response = connection.getresponse()
        text = response.read().decode().strip()
        body = text if response.status == 200 else ""
    except (OSError, http.client.HTTPException):
        pass
    finally:
        connection.close()
    with lock:
        print(f"{started:.6f}\t{time.monotonic():.6f}\t{body}", flush=True)
end = time.monotonic() + limit
next_at = time.monotonic()
while time.monotonic() < end:
    threading.Thread(target=one, daemon=True).start()
    next_at += pause
    time.sleep(max(0.0, next_at - time.monotonic()))
"""


class PacedClient(NamespaceLoopingClient):
    """``NamespaceLoopingClient`` whose requests start every ``pause`` seconds whatever
    the ones before are doing."""

    def __enter__(self) -> PacedClient:
        argv = [sys.executable, "-c", _LOOP, self.address, str(self.timeout), str(self.pause)]
        self._process = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, *argv, str(self.limit)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self


def _wait(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.05)
    return time.monotonic() - start


def _create_single(world: LabWorld, name: str) -> str:
    lb_id = create_single(world, name)
    world.api.wait_active(lb_id)
    return lb_id


def _served_again(client: LoopingClient, lost_at: float) -> float | None:
    """When the VIP served again for good after the loss at ``lost_at``: the end of the
    first answered request started after the last failed one (None: nothing failed).

    Measured from the first failure instead, a request answered in the few milliseconds
    before the loss reached the data plane (the freeze and the cut are not one instant)
    passed for the recovery: two trials of five read 0.01 s although about 55 requests
    then failed for seconds. A failure is recorded when it ends (0.5 s timeout), so the
    answer is read again until it holds for a second.
    """

    def failures() -> list[float]:
        return [a.started for a in list(client.attempts) if a.started >= lost_at and not a.body]

    def after_last_failure() -> float | None:
        last = max(failures())
        answered = (a.ended for a in list(client.attempts) if a.started > last and a.body)
        return min(answered, default=None)

    if not failures():
        return None
    while True:
        _wait(lambda: after_last_failure() is not None, "served again")
        seen = after_last_failure()
        time.sleep(1.0)
        if after_last_failure() == seen:
            return seen


def _lose(world: LabWorld, client: LoopingClient, host: str) -> dict[str, Any]:
    """Lose ``host`` while ``client`` is served; the outage and the lab's figures."""
    _wait(lambda: client.served_after(time.monotonic() - 0.2) is not None, "served before")
    lost_at = time.monotonic()
    loss = world.lab.host_down(host).figures()
    time.sleep(1.0)  # a request in flight at the loss may still be answered
    served = _served_again(client, lost_at)
    return {
        "host": host,
        "outage_s": 0.0 if served is None else round(served - lost_at, 3),
        "failed_requests": client.failed_between(lost_at, time.monotonic()),
        "host_down": loss,
    }


def _bring_back(world: LabWorld, host: str) -> float:
    """Links up, the agent started; seconds until UP with no leftover amphora namespace."""
    start = time.monotonic()
    world.lab.heal(host)
    start_agent(world.lab, host)
    index = world.lab.host_index(host)
    settings = world.services["settings"]
    namespace = world.lab.names.control
    _wait(lambda: host_list(namespace, settings)[host]["status"] == HostStatus.UP, "host UP")
    prefix = world.lab.names.host_prefix(index)

    def no_leftover() -> bool:  # the agent's spares (``--spares``) are not leftovers
        spares = prefix + SPARE_NAMESPACE
        return not any(ns.startswith(prefix) and not ns.startswith(spares) for ns in _namespaces())

    _wait(no_leftover, f"{host}'s leftover amphorae removed")
    return time.monotonic() - start


def _namespaces() -> list[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in done.stdout.splitlines() if line]


def _single_trial(world: LabWorld, number: int) -> dict[str, Any]:
    lb_id = _create_single(world, f"single-{number}")
    [amphora] = live_amphorae(world, lb_id)
    host = str(amphora["compute_id"])
    vip = vip_of(world, lb_id)
    with PacedClient(
        vip, namespace=world.lab.names.client, timeout=REQUEST_TIMEOUT, pause=REQUEST_EVERY
    ) as client:
        figures = _lose(world, client, host)
    figures["back_s"] = round(_bring_back(world, host), 3)
    world.api.call("DELETE", f"{V2}/loadbalancers/{lb_id}?cascade=true")
    return figures


def _pair_trial(world: LabWorld) -> dict[str, Any]:
    lb_id = create_pair(world, "pair")
    world.api.wait_active(lb_id)
    _wait(lambda: len(live_amphorae(world, lb_id)) == 2, "pair whole")
    roles = {a["role"]: a for a in live_amphorae(world, lb_id)}
    master = str(roles[AmphoraRole.MASTER]["compute_id"])
    vip = vip_of(world, lb_id)
    with PacedClient(
        vip, namespace=world.lab.names.client, timeout=REQUEST_TIMEOUT, pause=REQUEST_EVERY
    ) as client:
        time.sleep(2.0)  # the BACKUP settled in BACKUP
        return _lose(world, client, master)


def _control_plane_trial(directory: Path, name: str) -> dict[str, Any]:
    lab = Lab(name, directory)
    try:
        lab.up(hosts=1, control=3)
        start_services(lab)
        loss = lose_control_host(lab)
        return {
            "control_hosts": 3,
            "lost": loss.lost,
            **loss.figures,
            "failed_over": loss.amphorae_after != loss.amphorae_before,
        }
    finally:
        lab.down()


def _summary(outages: list[float]) -> dict[str, Any]:
    return {"p50_s": statistics.median(outages), "max_s": max(outages), "samples": outages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5, help="SINGLE host losses (default 5)")
    parser.add_argument("--name", default=f"hl{uuid.uuid4().hex[:5]}", help="lab name prefix")
    parser.add_argument("--quick", action="store_true", help="one SINGLE trial, no pair")
    parser.add_argument(
        "--only-single", action="store_true", help="the SINGLE trials only (no pair, no control)"
    )
    parser.add_argument(
        "--spares", type=int, default=0, help="every agent's agent.spare_amphorae (issue 35)"
    )
    args = parser.parse_args()
    trials = 1 if args.quick else args.trials
    load_before = os.getloadavg()
    directory = Path(tempfile.mkdtemp(prefix="hl", dir="/tmp"))  # short: socket paths
    with lab_world(directory, hosts=3, prefix=args.name[:3], spare_amphorae=args.spares) as world:
        singles = [_single_trial(world, n) for n in range(trials)]
        pair = None if args.quick or args.only_single else _pair_trial(world)
    control = None
    if not (args.quick or args.only_single):
        own = Path(tempfile.mkdtemp(prefix="hc", dir="/tmp"))  # short: socket paths
        try:
            control = _control_plane_trial(own, f"{args.name[:3]}c")
        finally:
            subprocess.run(["rm", "-rf", str(own)], check=False)
    result: dict[str, Any] = {
        "hosts": 3,
        "spare_amphorae": args.spares,
        "request_every_s": REQUEST_EVERY,
        "request_timeout_s": REQUEST_TIMEOUT,
        "single": {**_summary([t["outage_s"] for t in singles]), "trials": singles},
        "active_standby": pair,
        "control_plane": control,
        "target_s": {"single_p50": 3.0, "single_max": 5.0, "active_standby": 1.0},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
