"""A VIP's security groups on the amphora provider in netns mode, with real clients.

Needs root. The netns world of ``test_netns_serve`` (``lbaas serve``, the test's two
subnets, its own namespaces, everything removed even on failure). A security group with
one ingress rule (TCP, the listener's port, from client c1's address only) is named in
the load balancer's ``vip_sg_ids``; a TCP listener balances two HTTP backends. Then:

- c1 is served, c2 (another address on the same VIP network) gets nothing: its SYN is
  dropped by the VIP filter in the amphora's namespace (``amphora/vip_filter.py``) and
  HAProxy's ACL would close it too; its connect times out;
- a rule for c2's address added through the Networking API converges the load balancer
  without any write to it, and c2 is served soon after (the time is printed);
- that rule deleted again, c2 is refused again while c1 is still served.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lbaas.amphora.plumbing import bridge_name
from tests.e2e.amphora import test_netns_serve as netns
from tests.e2e.amphora.test_netns_serve import BACKEND_PORT, NetnsWorld, get_from_namespace

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]
PORT = 8081
world = netns.world  # the netns world's fixture, shared


def _created(world: NetnsWorld, path: str, wrapper: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = world.api.http.post(path, json={wrapper: body})
    assert reply.status_code == 201, reply.text
    created: dict[str, Any] = reply.json()[wrapper]
    return created


def _allow(world: NetnsWorld, group_id: str, address: str) -> str:
    rule = {"security_group_id": group_id, "direction": "ingress", "protocol": "tcp",
            "port_range_min": PORT, "port_range_max": PORT,
            "remote_ip_prefix": f"{address}/32"}  # fmt: skip
    return str(_created(world, "/v2.0/security-group-rules", "security_group_rule", rule)["id"])


def _served(world: NetnsWorld, namespace: str, vip: str) -> bool:
    answers = get_from_namespace(world, namespace, vip, PORT)
    return all(a.startswith("backend-") for a in answers)


def _refused(world: NetnsWorld, namespace: str, vip: str) -> bool:
    answers = get_from_namespace(world, namespace, vip, PORT)
    return not any(a.startswith("backend-") for a in answers)


def _until(check: Any, what: str, started: float) -> float:
    while not check():
        assert time.monotonic() - started < 60, what
    return time.monotonic() - started


def test_only_what_the_vip_groups_allow_is_served(world: NetnsWorld, tmp_path: Path) -> None:
    api, scratch = world.api, world.scratch
    vip_subnet, member_subnet = world.vip_subnet, world.member_subnet
    c1, c2 = vip_subnet.address(250), vip_subnet.address(251)
    group = _created(world, "/v2.0/security-groups", "security_group", {"name": "front"})
    _allow(world, group["id"], c1)

    lb = api.create_loadbalancer(vip_subnet.id, name=f"sg-{scratch.tag}", vip_sg_ids=[group["id"]])
    lb_id, vip = lb["id"], lb["vip_address"]
    scratch.amphora_ids.update(a["id"] for a in api.amphorae(lb_id))
    listener = api.create_listener(lb_id, "TCP", PORT)
    pool = api.create_pool(lb_id, "TCP", "ROUND_ROBIN", listener_id=listener["id"])
    member_bridge, vip_bridge = (
        bridge_name(member_subnet.network_id),
        bridge_name(vip_subnet.network_id),
    )
    for i, name in enumerate(("b1", "b2")):
        address = member_subnet.address(200 + i)
        api.create_member(lb_id, pool["id"], address, BACKEND_PORT, subnet_id=member_subnet.id)
        namespace = scratch.plug(name, member_bridge, member_subnet.cidr_of(200 + i))
        scratch.serve_name(namespace, address, f"backend-{name}", tmp_path)
    ns1 = scratch.plug("c1", vip_bridge, vip_subnet.cidr_of(250))
    ns2 = scratch.plug("c2", vip_bridge, vip_subnet.cidr_of(251))

    _until(lambda: _served(world, ns1, vip), "c1 served", time.monotonic())
    assert _refused(world, ns2, vip)

    started = time.monotonic()
    rule_id = _allow(world, group["id"], c2)
    took = _until(lambda: _served(world, ns2, vip), "c2 served after its rule", started)
    print(f"c2 served {took:.2f}s after its rule was created")
    assert api.loadbalancer(lb_id)["provisioning_status"] == "ACTIVE"

    assert world.api.http.delete(f"/v2.0/security-group-rules/{rule_id}").status_code == 204
    _until(lambda: _refused(world, ns2, vip), "c2 refused after its rule went", time.monotonic())
    assert _served(world, ns1, vip)
