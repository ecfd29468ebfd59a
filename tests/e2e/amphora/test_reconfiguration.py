"""Requests without pause while 100 member changes are applied: not one of them fails."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.topology import HttpService, http_service, loadbalancer
from tests.e2e.amphora.traffic import LoopingClient, wait_for_backends
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

CYCLES = 25
"""Each cycle makes four changes: 100 in all."""


def one_cycle(service: HttpService, cycle: int, extra_name: str) -> list[str]:
    """Add a member, change its weight, drain it (or re-weight another), remove it."""
    api, lb_id, pool_id = service.api, service.lb.id, service.pool["id"]
    done = []
    extra = service.members[extra_name]
    member = api.create_member(
        lb_id, pool_id, extra["address"], extra["protocol_port"], name=extra_name
    )
    done.append("add")
    api.update_member(lb_id, pool_id, member["id"], weight=2 + cycle % 8)
    done.append("weight")
    if cycle % 2 == 0:
        api.update_member(lb_id, pool_id, member["id"], weight=0)
        done.append("drain")
    else:
        steady = service.members["steady-a"]["id"]
        api.update_member(lb_id, pool_id, steady, weight=1 + cycle % 5)
        done.append("weight")
    api.delete_member(lb_id, pool_id, member["id"])
    done.append("remove")
    return done


def test_member_changes_under_load_fail_no_request(api: OctaviaApi, backends: BackendFleet) -> None:
    steady = backends.http("steady-a", "steady-b")
    extras = backends.http("extra-0", "extra-1")
    with loadbalancer(api, "reconfigure") as lb:
        service = http_service(lb, steady)
        wait_for_backends(service.vip, service.port, {"steady-a", "steady-b"})
        # Where each extra backend listens, kept in the same shape as a member body.
        for backend in extras:
            service.members[backend.name] = {
                "address": backend.address,
                "protocol_port": backend.port,
            }
        changes: list[str] = []
        started = time.monotonic()
        with LoopingClient(service.vip, service.port) as client:
            wait_until(lambda: client.ok >= 10, 30, "the client to get going")
            for cycle in range(CYCLES):
                changes.extend(one_cycle(service, cycle, extras[cycle % 2].name))
            ok_during_changes = client.ok
        elapsed = time.monotonic() - started
        print(
            json.dumps(
                {
                    "measure": "reconfiguration_under_load",
                    "member_changes": len(changes),
                    "requests_ok": client.ok,
                    "requests_failed": len(client.failures),
                    "seconds": round(elapsed, 2),
                    "answered_by": dict(client.answered_by),
                }
            )
        )
        assert len(changes) == 4 * CYCLES == 100
        assert len(client.failures) == 0, client.failures[:10]
        assert ok_during_changes > 100
        assert client.answered_by["extra-0"] > 0 and client.answered_by["extra-1"] > 0
