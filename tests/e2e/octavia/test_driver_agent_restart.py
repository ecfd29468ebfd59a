"""Nothing lost between Octavia and lbaas: Octavia's driver agent is killed while a listener
is being created; lbaas finishes it, nobody can tell Octavia, and once the driver agent is
back its lbaas provider agent reconciles: the listener ends ACTIVE on both sides. And a
single-call create whose L7 policy the API process had not yet created in lbaas when both
of Octavia's processes died: the reconcile creates it (lbaas's load balancer still carries
the mark ``octavia-l7-pending``) rather than reporting it DELETED."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.e2e.octavia.both_sides import gone
from tests.e2e.octavia.conftest import PROJECT, Sides
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


def _status(api: Any, path: str, wrapper: str) -> str:
    answer = api.get(path)
    return str(answer.json()[wrapper]["provisioning_status"]) if answer.status_code == 200 else ""


def _active_in_octavia(sides: Sides, child: tuple[str, str], lb_path: str) -> None:
    """Wait for ``child`` (path, wrapper) and its load balancer ACTIVE in Octavia. Both,
    not one then the other: the driver agent writes each object of one report in a
    transaction of its own, the child a moment before its parent."""
    path, wrapper = child
    try:
        wait_until(
            lambda: (
                _status(sides.octavia_api, path, wrapper) == "ACTIVE"
                and _status(sides.octavia_api, lb_path, "loadbalancer") == "ACTIVE"
            ),
            120,
            f"the {wrapper} and its load balancer ACTIVE in Octavia after the restart",
        )
    except AssertionError as exc:
        log = sides.octavia.log_tail("octavia-driver-agent", 6000)
        raise AssertionError(f"{exc}; the driver agent's log ends:\n{log}") from exc


def _gone(sides: Sides, lb_id: str) -> None:
    """The next test kills Octavia's processes: a delete whose DELETED report is still on
    its way would be lost with them (an Octavia load balancer lbaas no longer has at all
    is one no reconciliation can find)."""
    wait_until(lambda: gone(sides, lb_id), 60, "the load balancer gone on both sides")


def _up(api: httpx.Client) -> bool:
    try:
        return api.get("/").status_code < 500
    except httpx.HTTPError:
        return False


def test_a_listener_created_while_the_driver_agent_is_down_ends_active(sides: Sides) -> None:
    vip = sides.vip(10)
    body = {
        "name": "octa-restart",
        "project_id": PROJECT,
        "provider": "lbaas",
        "vip_subnet_id": LOOPBACK_SUBNET_ID,
        "vip_address": vip,
    }
    created = sides.octavia_api.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
    assert created.status_code == 201, created.text
    lb_id = created.json()["loadbalancer"]["id"]
    lb_path = f"/v2/lbaas/loadbalancers/{lb_id}"
    try:
        wait_until(
            lambda: _status(sides.octavia_api, lb_path, "loadbalancer") == "ACTIVE",
            60,
            "the load balancer ACTIVE in Octavia",
        )
        sides.octavia.kill("octavia-driver-agent")
        listener = {
            "loadbalancer_id": lb_id,
            "protocol": "TCP",
            "protocol_port": free_port_on(vip),
            "name": "during-restart",
        }
        made = sides.octavia_api.post("/v2/lbaas/listeners", json={"listener": listener})
        assert made.status_code == 201, made.text
        path = f"/v2/lbaas/listeners/{made.json()['listener']['id']}"
        wait_until(
            lambda: _status(sides.lbaas_api, path, "listener") == "ACTIVE",
            60,
            "lbaas to finish the listener",
        )
        # Octavia cannot have been told: its driver agent is down.
        assert _status(sides.octavia_api, path, "listener") == "PENDING_CREATE"
        assert _status(sides.octavia_api, lb_path, "loadbalancer") == "PENDING_UPDATE"

        sides.octavia.start("octavia-driver-agent")
        _active_in_octavia(sides, (path, "listener"), lb_path)
        assert _status(sides.lbaas_api, path, "listener") == "ACTIVE"
    finally:
        # Through Octavia as a user would; lbaas's own clean-up (running_serve) removes
        # whatever a failed run left there.
        sides.octavia_api.delete(f"{lb_path}?cascade=true")
    _gone(sides, lb_id)


def test_the_l7_policy_of_a_single_call_create_is_finished_by_the_restarted_agent(
    sides: Sides,
) -> None:
    vip = sides.vip(12)
    rule = {"type": "PATH", "compare_type": "STARTS_WITH", "value": "/private"}
    listener = {"protocol": "HTTP", "protocol_port": free_port_on(vip),
                "l7policies": [{"action": "REJECT", "rules": [rule]}]}  # fmt: skip
    body = {"name": "octa-l7-restart", "project_id": PROJECT, "provider": "lbaas",
            "vip_subnet_id": LOOPBACK_SUBNET_ID, "vip_address": vip, "listeners": [listener]}  # fmt: skip
    # The driver agent down: the API process cannot read the policy back, so it cannot
    # create it in lbaas before it is killed too (the window a restart may fall in).
    sides.octavia.kill("octavia-driver-agent")
    created = sides.octavia_api.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
    assert created.status_code == 201, created.text
    lb_id = created.json()["loadbalancer"]["id"]
    lb_path = f"/v2/lbaas/loadbalancers/{lb_id}"
    try:
        sides.octavia.kill("octavia-api")
        shown = sides.lbaas_api.get(lb_path).json()["loadbalancer"]
        assert "octavia-l7-pending" in shown["tags"]
        listener_path = f"/v2/lbaas/listeners/{shown['listeners'][0]['id']}"
        assert sides.lbaas_api.get(listener_path).json()["listener"]["l7policies"] == []
        sides.octavia.start("octavia-driver-agent")
        sides.octavia.start("octavia-api")
        wait_until(lambda: _up(sides.octavia_api), 120, "Octavia's API back")
        policies = sides.octavia_api.get(listener_path).json()["listener"]["l7policies"]
        policy_path = f"/v2/lbaas/l7policies/{policies[0]['id']}"
        _active_in_octavia(sides, (policy_path, "l7policy"), lb_path)
        assert _status(sides.lbaas_api, policy_path, "l7policy") == "ACTIVE"
        rules = sides.lbaas_api.get(f"{policy_path}/rules").json()["rules"]
        assert [(r["value"], r["provisioning_status"]) for r in rules] == [("/private", "ACTIVE")]
        tags = sides.lbaas_api.get(lb_path).json()["loadbalancer"]["tags"]
        assert tags == ["octavia-provider"]
    finally:
        if "octavia-api" not in sides.octavia.processes:
            sides.octavia.start("octavia-api")
        if "octavia-driver-agent" not in sides.octavia.processes:
            sides.octavia.start("octavia-driver-agent")
        wait_until(lambda: _up(sides.octavia_api), 120, "Octavia's API back")
        sides.octavia_api.delete(f"{lb_path}?cascade=true")
    _gone(sides, lb_id)
