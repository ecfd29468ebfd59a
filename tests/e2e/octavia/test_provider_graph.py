"""Octavia's single-call ("fully populated") create with ``provider: lbaas``: one POST to
Octavia's API with the load balancer's listener, pools, members, monitors, L7 policy and
rule becomes one single-call create in lbaas, every object keeping Octavia's id.

lbaas's HAProxy serves the VIP: the listener's default pool balances two real backends and
the L7 policy sends ``/api`` to a second pool; every object ends ACTIVE and ONLINE in
Octavia with the same ids as in lbaas, and a cascade delete leaves nothing on either side.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.e2e.octavia.both_sides import gone, nothing_left
from tests.e2e.octavia.conftest import PROJECT, Sides
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]
Objects = dict[tuple[str, str], tuple[str, str]]  # (path, id) -> (provisioning, operating)
# Not Octavia's default (50000): carried over, not dropped on the way to lbaas.
CLIENT_TIMEOUT = 40000


@pytest.fixture
def api_backend() -> Iterator[HttpBackend]:
    backend = HttpBackend("api")
    try:
        yield backend
    finally:
        backend.close()


def _member(backend: HttpBackend) -> dict[str, Any]:
    return {"address": backend.address, "protocol_port": backend.port}


def _monitor() -> dict[str, Any]:
    return {"type": "HTTP", "delay": 1, "timeout": 1, "max_retries": 1, "url_path": "/"}


def _body(vip: str, port: int, web: list[HttpBackend], api: HttpBackend) -> dict[str, Any]:
    listener = {
        "name": "graph-http",
        "protocol": "HTTP",
        "protocol_port": port,
        "timeout_client_data": CLIENT_TIMEOUT,
        "default_pool": {
            "name": "graph-web",
            "protocol": "HTTP",
            "lb_algorithm": "ROUND_ROBIN",
            "members": [_member(b) for b in web],
            "healthmonitor": _monitor(),
        },
        "l7policies": [
            {
                "name": "to-api",
                "action": "REDIRECT_TO_POOL",
                "redirect_pool": {"name": "graph-api"},
                "rules": [{"type": "PATH", "compare_type": "STARTS_WITH", "value": "/api"}],
            }
        ],
    }
    api_pool = {
        "name": "graph-api",
        "protocol": "HTTP",
        "lb_algorithm": "ROUND_ROBIN",
        "members": [_member(api)],
        "healthmonitor": _monitor(),
    }
    lb = {
        "name": "octa-graph",
        "project_id": PROJECT,
        "provider": "lbaas",
        "vip_subnet_id": LOOPBACK_SUBNET_ID,
        "vip_address": vip,
        "listeners": [listener],
        "pools": [api_pool],
    }
    return {"loadbalancer": lb}


def _add(found: Objects, path: str, obj: dict[str, Any]) -> None:
    found[(path, str(obj["id"]))] = (obj["provisioning_status"], obj["operating_status"])


def _objects(api: httpx.Client, lb_id: str) -> Objects:
    """Every object of the load balancer as one API shows it, each read on its own."""
    found: Objects = {}

    def get(path: str, wrapper: str) -> dict[str, Any]:
        obj: dict[str, Any] = api.get(f"/v2/lbaas/{path}").json()[wrapper]
        _add(found, path.rsplit("/", 1)[0], obj)
        return obj

    lb = get(f"loadbalancers/{lb_id}", "loadbalancer")
    for ref in lb["listeners"]:
        listener = get(f"listeners/{ref['id']}", "listener")
        for policy_ref in listener["l7policies"]:
            policy = get(f"l7policies/{policy_ref['id']}", "l7policy")
            for rule in policy["rules"]:
                get(f"l7policies/{policy['id']}/rules/{rule['id']}", "rule")
    for ref in lb["pools"]:
        pool = get(f"pools/{ref['id']}", "pool")
        for member in api.get(f"/v2/lbaas/pools/{ref['id']}/members").json()["members"]:
            _add(found, f"pools/{ref['id']}/members", member)
        if pool.get("healthmonitor_id"):
            get(f"healthmonitors/{pool['healthmonitor_id']}", "healthmonitor")
    return found


def _names(url: str, count: int) -> list[str]:
    return [httpx.get(url, timeout=5).text for _ in range(count)]


def test_a_single_call_create_through_octavia_with_provider_lbaas(
    sides: Sides, backends: list[HttpBackend], api_backend: HttpBackend
) -> None:
    vip = sides.vip(11)
    port = free_port_on(vip)
    started = time.monotonic()
    created = sides.octavia_api.post(
        "/v2/lbaas/loadbalancers", json=_body(vip, port, backends, api_backend)
    )
    assert created.status_code == 201, created.text
    lb_id = created.json()["loadbalancer"]["id"]
    try:
        settled = {("ACTIVE", "ONLINE")}
        try:
            wait_until(
                lambda: set(_objects(sides.octavia_api, lb_id).values()) == settled,
                60,
                "every object ACTIVE and ONLINE in Octavia",
            )
        except AssertionError as exc:
            both = [_objects(api, lb_id) for api in (sides.octavia_api, sides.lbaas_api)]
            raise AssertionError(f"{exc}: Octavia {both[0]}, lbaas {both[1]}") from exc
        print(f"single-call create ACTIVE and ONLINE in Octavia {time.monotonic() - started:.1f} s")
        octavia, lbaas = _objects(sides.octavia_api, lb_id), _objects(sides.lbaas_api, lb_id)
        # lb, listener, policy, rule, 2 pools, 3 members, 2 monitors: the same ids both sides
        assert len(octavia) == 11, octavia
        assert set(lbaas) == set(octavia)
        assert set(lbaas.values()) == settled

        shown = sides.lbaas_api.get(f"/v2/lbaas/loadbalancers/{lb_id}").json()["loadbalancer"]
        assert (shown["provider"], shown["project_id"]) == ("amphora", PROJECT)
        listener_id = shown["listeners"][0]["id"]
        listener = sides.lbaas_api.get(f"/v2/lbaas/listeners/{listener_id}").json()["listener"]
        assert listener["timeout_client_data"] == CLIENT_TIMEOUT

        names = _names(f"http://{vip}:{port}/", 10)
        assert sorted(set(names)) == ["one", "two"], names
        assert set(_names(f"http://{vip}:{port}/api/v1", 4)) == {"api"}
    finally:
        sides.cli.run("loadbalancer", "delete", "--cascade", "--wait", lb_id)
    wait_until(lambda: gone(sides, lb_id), 30, "the load balancer gone on both sides")
    nothing_left(sides)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://{vip}:{port}/", timeout=2)
