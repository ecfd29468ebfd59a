"""Three control-plane hosts in a lab, one of them lost while 20 load balancers change.

Needs root. ``up --control 3``: ctl, ctl2 and ctl3 each run api, worker and health against
the database host's PostgreSQL, coordinated on it; h1's agent heartbeats to all three
health processes. A client in ``<lab>-cli`` keeps changing 20 noop load balancers through
the two APIs that will survive (PUT, then GET until ACTIVE, round robin over the two)
while the control host leading housekeeping is lost at one instant (``host-down``): every
call is answered, every change in flight is finished by a surviving worker (a lost
worker's claim lapses after the job lease), no load balancer stays PENDING, the amphora
load balancer on h1 is not failed over (its heartbeats still reach two health processes)
and every singleton loop is led again, by a surviving host.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lab_api import V2, LabApi, host_list, lab_api_when_up

from lbaas.lab.lab import Lab
from lbaas.lab.leaders import leaders
from lbaas.lab.services import start_services
from lbaas.model.enums import HostStatus
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.haproxy]

CLIENT = Path(__file__).with_name("control_client.py")
CHANGING = 20
CLIENT_SECONDS = 16.0
LOSS_AFTER = 4.0
SINGLETONS = {"distributed-poll", "housekeeping"}


def statuses(api: LabApi, ids: list[str]) -> dict[str, str]:
    return {i: api.status_of(i) for i in ids}


def amphorae(api: LabApi, lb_id: str) -> list[tuple[str, str, str]]:
    shown = api.call("GET", f"/v2/octavia/amphorae?loadbalancer_id={lb_id}")["amphorae"]
    return sorted((a["id"], a["status"], a["compute_id"]) for a in shown)


def led_by(lab: Lab, hosts: list[str]) -> bool:
    shown = leaders(lab)
    return SINGLETONS <= set(shown) and all(shown[loop]["host"] in hosts for loop in SINGLETONS)


def test_a_control_host_lost_while_twenty_load_balancers_change(
    lab_name: str, lab_dir: Path
) -> None:
    lab = Lab(lab_name, lab_dir)
    try:
        lab.up(hosts=1, members=1, control=3)
        start_services(lab)
        services, api = lab_api_when_up(lab, 1)
        apis: dict[str, str] = services["apis"]
        assert sorted(apis) == ["ctl", "ctl2", "ctl3"]
        subnet = services["vip_subnet_id"]
        amphora_lb = api.call(
            "POST", f"{V2}/loadbalancers", {"loadbalancer": {"vip_subnet_id": subnet}}
        )["loadbalancer"]["id"]
        ids = [
            api.call(
                "POST",
                f"{V2}/loadbalancers",
                {"loadbalancer": {"vip_subnet_id": subnet, "provider": "noop", "name": f"n{i}"}},
            )["loadbalancer"]["id"]
            for i in range(CHANGING)
        ]
        wait_until(
            lambda: set(statuses(api, [amphora_lb, *ids]).values()) == {"ACTIVE"},
            timeout=90,
            what="21 load balancers ACTIVE",
        )
        before = amphorae(api, amphora_lb)
        wait_until(lambda: led_by(lab, list(apis)), timeout=30, what="every singleton led")
        lost = leaders(lab)["housekeeping"]["host"]
        survivors = [name for name in apis if name != lost]
        client = subprocess.Popen(
            ["ip", "netns", "exec", lab.names.client, sys.executable, str(CLIENT)]
            + [str(CLIENT_SECONDS), ",".join(apis[s] for s in survivors), *ids],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(LOSS_AFTER)
            loss = lab.host_down(lost)
            lost_at = time.monotonic()
            wait_until(lambda: led_by(lab, survivors), timeout=30, what="leaders on survivors")
            led_again = time.monotonic() - lost_at
            out, err = client.communicate(timeout=CLIENT_SECONDS + 120)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
        assert client.returncode == 0, err
        figures = json.loads(out)
        print(json.dumps({**figures, "leaders_again_s": round(led_again, 2), **loss.figures()}))
        assert figures["calls"] > 4 * CHANGING  # the changes went on through the loss
        assert figures["failures"] == []
        survivor = LabApi(lab.names.client, apis[survivors[0]])
        wait_until(
            lambda: set(statuses(survivor, [amphora_lb, *ids]).values()) == {"ACTIVE"},
            timeout=30,
            what="nothing left PENDING",
        )
        assert amphorae(survivor, amphora_lb) == before  # no failover
        settings = lab.services_dir / survivors[0] / "lbaas.toml"
        hosts = host_list(lab.names.control_host(int(survivors[0][3:] or 1)), settings)
        assert hosts["h1"]["status"] == HostStatus.UP
        shown = leaders(lab)
        assert {shown[loop]["host"] for loop in SINGLETONS} <= set(survivors)
    finally:
        lab.down()
