"""Nothing lost between Octavia and lbaas: Octavia's driver agent is killed while a listener
is being created; lbaas finishes it, nobody can tell Octavia, and once the driver agent is
back its lbaas provider agent reconciles: the listener ends ACTIVE on both sides."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.e2e.octavia.conftest import PROJECT, Sides
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


def _status(api: Any, path: str, wrapper: str) -> str:
    answer = api.get(path)
    return str(answer.json()[wrapper]["provisioning_status"]) if answer.status_code == 200 else ""


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
        try:
            # Both, not one then the other: the driver agent writes each object of one
            # report in a transaction of its own, the listener a moment before its parent.
            wait_until(
                lambda: (
                    _status(sides.octavia_api, path, "listener") == "ACTIVE"
                    and _status(sides.octavia_api, lb_path, "loadbalancer") == "ACTIVE"
                ),
                90,
                "the listener and its load balancer ACTIVE in Octavia after the restart",
            )
        except AssertionError as exc:
            log = sides.octavia.log_tail("octavia-driver-agent", 6000)
            raise AssertionError(f"{exc}; the driver agent's log ends:\n{log}") from exc
        assert _status(sides.lbaas_api, path, "listener") == "ACTIVE"
    finally:
        # Through Octavia as a user would; lbaas's own clean-up (running_serve) removes
        # whatever a failed run left there.
        sides.octavia_api.delete(f"{lb_path}?cascade=true")
