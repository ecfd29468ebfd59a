"""A control-plane host lost while load balancers change: the run, for a test and a bench.

In a lab built with ``up --control 3`` and started (``start_services``): one amphora load
balancer on the lab's hosts and ``changing`` noop ones, all ACTIVE; then a client in
``<lab>-cli`` (``control_client.py``) changes the noop ones through the two control hosts
that will survive while the one leading housekeeping is lost (``Lab.host_down``). What is
returned is measured, not judged: the test (``test_lab_control_hosts.py``) asserts on it,
``bench/host_loss.py`` prints it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lbaas.lab.lab import Lab
from lbaas.lab.leaders import leaders
from lbaas.lab.names import control_index
from lbaas.lab.services import control_dir, services_status
from lbaas.model.enums import HostStatus
from tests.e2e.lab.lab_api import V2, LabApi, host_list
from tests.support.waiting import wait_until

CLIENT = Path(__file__).with_name("control_client.py")
SINGLETONS = frozenset({"distributed-poll", "housekeeping"})


@dataclass
class ControlLoss:
    lost: str
    survivors: list[str]
    figures: dict[str, Any] = field(default_factory=dict)
    """The client's (calls, failures, longest gap and converge), the loss's, the leaders'."""
    amphorae_before: list[tuple[str, str, str]] = field(default_factory=list)
    amphorae_after: list[tuple[str, str, str]] = field(default_factory=list)
    host_status: str = ""
    leaders_after: dict[str, str] = field(default_factory=dict)


def _statuses(api: LabApi, ids: list[str]) -> set[str]:
    return {api.status_of(i) for i in ids}


def _amphorae(api: LabApi, lb_id: str) -> list[tuple[str, str, str]]:
    shown = api.call("GET", f"/v2/octavia/amphorae?loadbalancer_id={lb_id}")["amphorae"]
    return sorted((a["id"], a["status"], a["compute_id"]) for a in shown)


def _led_by(lab: Lab, hosts: list[str]) -> bool:
    shown = leaders(lab)
    return SINGLETONS <= set(shown) and all(shown[loop]["host"] in hosts for loop in SINGLETONS)


def _every_host_up(lab: Lab, hosts: int) -> bool:
    settings = control_dir(lab, 1) / "lbaas.toml"
    found = host_list(lab.names.control, settings)
    return [h["status"] for h in found.values()] == [HostStatus.UP] * hosts


def lose_control_host(
    lab: Lab, changing: int = 20, seconds: float = 16.0, loss_after: float = 4.0
) -> ControlLoss:
    services = services_status(lab)
    hosts = lab.state().hosts
    wait_until(lambda: _every_host_up(lab, hosts), timeout=60, what="the hosts UP")
    apis: dict[str, str] = services["apis"]
    api = LabApi(lab.names.control, services["api"])
    subnet = services["vip_subnet_id"]
    create = {"loadbalancer": {"vip_subnet_id": subnet}}
    amphora_lb = api.call("POST", f"{V2}/loadbalancers", create)["loadbalancer"]["id"]
    noop = {"vip_subnet_id": subnet, "provider": "noop"}
    ids = [
        api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": {**noop, "name": f"n{i}"}})[
            "loadbalancer"
        ]["id"]
        for i in range(changing)
    ]
    every = [amphora_lb, *ids]
    wait_until(lambda: _statuses(api, every) == {"ACTIVE"}, timeout=90, what="all ACTIVE")
    before = _amphorae(api, amphora_lb)
    wait_until(lambda: _led_by(lab, list(apis)), timeout=30, what="every singleton led")
    lost = leaders(lab)["housekeeping"]["host"]
    survivors = [name for name in apis if name != lost]
    argv = ["ip", "netns", "exec", lab.names.client, sys.executable, str(CLIENT), str(seconds)]
    argv += [",".join(apis[s] for s in survivors), *ids]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(loss_after)
        loss = lab.host_down(lost)
        lost_at = time.monotonic()
        wait_until(lambda: _led_by(lab, survivors), timeout=30, what="leaders on survivors")
        led_again = time.monotonic() - lost_at
        out, err = client.communicate(timeout=seconds + 120)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate()  # reaped, its pipes closed (left open, the next test errs)
    if client.returncode != 0:
        raise RuntimeError(f"the lab client failed: {err[-2000:]}")
    result = ControlLoss(lost, survivors, json.loads(out))
    result.figures |= {"leaders_again_s": round(led_again, 2), "host_down": loss.figures()}
    survivor = LabApi(lab.names.client, apis[survivors[0]])
    settled = time.monotonic()
    wait_until(lambda: _statuses(survivor, every) == {"ACTIVE"}, timeout=30, what="no PENDING")
    result.figures["settled_after_client_s"] = round(time.monotonic() - settled, 2)
    result.amphorae_before, result.amphorae_after = before, _amphorae(survivor, amphora_lb)
    settings = control_dir(lab, control_index(survivors[0])) / "lbaas.toml"
    namespace = lab.names.control_host(control_index(survivors[0]))
    result.host_status = str(host_list(namespace, settings)["h1"]["status"])
    result.leaders_after = {loop: row["host"] for loop, row in leaders(lab).items()}
    return result
