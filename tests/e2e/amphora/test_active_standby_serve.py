"""ACTIVE_STANDBY through the whole product: ``lbaas serve`` in netns mode, a flavor.

Needs root. A flavor whose profile says ``{"loadbalancer_topology": "ACTIVE_STANDBY"}``
gives a load balancer two amphorae (MASTER and BACKUP, each with a VRRP port on the VIP
subnet) run by the service's agent with keepalived; the amphora API shows what Octavia
shows. Traffic from the host reaches the members through the VIP. An amphora failover of
the MASTER (``PUT /v2/octavia/amphorae/{id}/failover``) replaces it alone: the BACKUP
becomes MASTER, a new BACKUP joins, and a client looping requests meanwhile is served
again afterwards (its failed requests are printed, not asserted: timings are the
benchmark's). Deleting the load balancer leaves neither namespace.

The service, networks and clean-up are ``test_netns_serve``'s (its ``Scratch``).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lbaas.amphora.plumbing import bridge_name, namespace_name
from lbaas.host.real import RealHostOps
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import running_serve
from tests.e2e.amphora.test_netns_serve import BACKEND_PORT, Scratch, ScratchSubnet
from tests.support.scratch_subnets import pick_subnets
from tests.support.vrrp_pair import LoopingClient, fetch
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]

PORT = 8080
TIMEOUT = 90.0


@pytest.fixture
def world() -> Iterator[tuple[OctaviaApi, Scratch]]:
    if os.geteuid() != 0:
        pytest.skip("netns mode needs root")
    if shutil.which("keepalived", path="/usr/sbin:/usr/bin:/sbin") is None:
        pytest.fail("ACTIVE_STANDBY needs keepalived")
    vip_net, member_net = pick_subnets(2)
    vip = ScratchSubnet(str(uuid.uuid4()), str(uuid.uuid4()), vip_net, str(vip_net[1]))
    members = ScratchSubnet(str(uuid.uuid4()), str(uuid.uuid4()), member_net, None)
    scratch = Scratch(RealHostOps(), vip, members)
    settings = {
        "agent": {"mode": "netns"},
        "network": {
            "subnets": [
                vip.declaration(f"vip-{scratch.tag}"),
                members.declaration(f"members-{scratch.tag}"),
            ]
        },
        "health": {"stale_after": 15.0},
    }
    try:
        with running_serve(settings, prefix="lbh-") as instance, instance.api() as api:
            try:
                yield api, scratch
            finally:
                scratch.amphora_ids.update(path.name for path in instance.amphora_dirs())
                scratch.remove_own()
    finally:
        scratch.sweep()


def _active_standby_flavor(api: OctaviaApi) -> str:
    data = '{"loadbalancer_topology": "ACTIVE_STANDBY"}'
    body = {"flavorprofile": {"name": "ha", "provider_name": "amphora", "flavor_data": data}}
    profile = api.http.post("/v2/lbaas/flavorprofiles", json=body)
    assert profile.status_code == 201, profile.text
    profile_id = profile.json()["flavorprofile"]["id"]
    flavor = api.http.post(
        "/v2/lbaas/flavors", json={"flavor": {"name": "ha", "flavor_profile_id": profile_id}}
    )
    assert flavor.status_code == 201, flavor.text
    flavor_id: str = flavor.json()["flavor"]["id"]
    return flavor_id


def _live(api: OctaviaApi, lb_id: str) -> dict[str, dict[str, Any]]:
    """The live amphorae of the load balancer by role."""
    live = [a for a in api.amphorae(lb_id) if a["status"] != "DELETED"]
    return {a["role"]: a for a in live}


def test_active_standby_pair_serves_and_fails_over_one_amphora(
    world: tuple[OctaviaApi, Scratch], tmp_path: Path
) -> None:
    api, scratch = world
    vip_subnet, member_subnet = scratch.vip_subnet, scratch.member_subnet
    lb = api.create_loadbalancer(vip_subnet.id, flavor_id=_active_standby_flavor(api))
    lb_id, vip = lb["id"], lb["vip_address"]
    pair = _live(api, lb_id)
    assert set(pair) == {"MASTER", "BACKUP"}, pair
    scratch.amphora_ids.update(a["id"] for a in pair.values())
    master, backup = pair["MASTER"], pair["BACKUP"]
    for amp in (master, backup):
        assert ipaddress.ip_address(amp["vrrp_ip"]) in vip_subnet.network
        assert amp["vrrp_port_id"] and amp["vrrp_interface"] and amp["compute_id"]
        assert amp["ha_ip"] == vip and amp["ha_port_id"] == lb["vip_port_id"]
    assert master["vrrp_ip"] != backup["vrrp_ip"]
    assert master["vrrp_id"] == backup["vrrp_id"]
    assert master["vrrp_priority"] > backup["vrrp_priority"]

    listener = api.create_listener(lb_id, "HTTP", PORT)
    pool = api.create_pool(
        lb_id,
        "HTTP",
        "ROUND_ROBIN",
        listener_id=listener["id"],
        session_persistence={"type": "SOURCE_IP"},
    )
    for index, name in enumerate(("b1", "b2")):
        address = member_subnet.address(200 + index)
        api.create_member(lb_id, pool["id"], address, BACKEND_PORT, subnet_id=member_subnet.id)
        namespace = scratch.plug(
            name, bridge_name(member_subnet.network_id), member_subnet.cidr_of(200 + index)
        )
        scratch.serve_name(namespace, address, f"backend-{name}", tmp_path)
    wait_until(lambda: fetch(vip, PORT, 2) is not None, TIMEOUT, "traffic through the VIP")

    with LoopingClient(vip, PORT, timeout=3.0) as client:
        started = time.monotonic()
        failover = api.http.put(f"/v2/octavia/amphorae/{master['id']}/failover")
        assert failover.status_code == 202, failover.text
        wait_until(
            lambda: (
                _live(api, lb_id).get("MASTER", {}).get("id") == backup["id"]
                and len(_live(api, lb_id)) == 2
            ),
            TIMEOUT,
            "the BACKUP promoted and a new BACKUP",
        )
        api.wait_active(lb_id)
        time.sleep(1)
        ended = time.monotonic()
    print(f"failed requests during the amphora failover: {client.failed_between(started, ended)}")
    assert client.served_after(ended - 1) is not None
    after = _live(api, lb_id)
    assert after["BACKUP"]["id"] not in (master["id"], backup["id"])
    scratch.amphora_ids.add(after["BACKUP"]["id"])
    assert not scratch.host.namespace_exists(namespace_name(master["id"]))

    scratch.remove_own()
    api.delete_loadbalancer(lb_id, timeout=TIMEOUT)
    for amp in after.values():
        wait_until(
            lambda a=amp: not scratch.host.namespace_exists(namespace_name(a["id"])),  # type: ignore[misc]
            TIMEOUT,
            "amphora namespaces gone",
        )
