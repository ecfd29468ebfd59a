"""A distributed load balancer reached from outside through the L4 tier, end to end.

``lbaas lab up --hosts 4 --tier 3``: the control plane in ``<lab>-ctl`` offers the
``distributed`` provider with one tier group of h1-h3 (``tier.groups``); every host's agent
is enrolled, and h1-h3 are tier nodes (BIRD peered with the router, a lease agent, the
watcher in the router's namespace; their agents own the BIRD include of VIP routes).
A load balancer created through the API with ``provider: distributed`` and a member on h4
is programmed on every host; only the group's agents announce its VIP, so the router's
route to it has h1-h3 as next hops, and the client namespace (behind the router, on no
node) reaches the member through all three (their rule counters). h2 lost whole
(``host-down``): the route keeps h1 and h3 and every request is answered. Deleting the load
balancer withdraws the route. Nothing here is wired by the test: it only calls the API
and the ``lbaas`` command, and reads what runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lab_api import V2, lab_api_when_up
from provider_tier import lab_cli, lab_up
from test_lab_services import MEMBER_PORT, curl, serve_member

from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps
from lbaas.lab.tier import LabTier

pytestmark = [pytest.mark.root, pytest.mark.slow]

NODES = (1, 2, 3)
REQUESTS = 30


def test_a_distributed_vip_is_served_to_the_outside_through_the_tier_group(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    with lab_up(lab_dir, "d", "--hosts", "4", "--tier", "3") as (lab, base):
        services, api = lab_api_when_up(lab, 4)
        member = serve_member(lab, "h4", lab_dir, sleepers)
        body = {"name": "edge", "vip_subnet_id": services["vip_subnet_id"]}
        created = api.call(
            "POST", f"{V2}/loadbalancers", {"loadbalancer": {**body, "provider": "distributed"}}
        )["loadbalancer"]
        lb_id, vip = str(created["id"]), str(created["vip_address"])
        api.wait_active(lb_id)
        listener = api.create(
            lb_id, "listeners", {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": 80}
        )
        pool = api.create(
            lb_id,
            "pools",
            {"listener_id": listener, "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
        )
        member_body = {
            "address": member,
            "protocol_port": MEMBER_PORT,
            "subnet_id": services["member_subnet_ids"]["m0"],
        }
        api.create(lb_id, f"pools/{pool}/members", member_body)

        tier = LabTier(lab, NODES)
        tier.wait_next_hops(vip, set(NODES), 60)
        shown = json.loads(lab_cli("tier", *base))
        for index in NODES:
            assert shown["nodes"][f"h{index}"]["announced"] == [f"{vip}/32"], shown
        # Every host carries the load balancer (its own clients), but no entry node holds
        # the VIP: the outside enters through the tier only.
        for index in (1, 2, 3, 4):
            addresses = subprocess.run(
                ["ip", "-n", lab.names.host(index), "-j", "addr"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert f'"{vip}"' not in addresses, index

        answers = [curl(lab.names.client, f"http://{vip}:80/") for _ in range(REQUESTS)]
        assert answers == ["served by h4\n"] * REQUESTS
        flows = {i: L4Engine(RealNftOps(lab.names.host(i))).new_flows(lb_id) for i in NODES}
        assert all(flows[i].get("tcp_80", 0) > 0 for i in NODES), flows
        assert sum(flows[i]["tcp_80"] for i in NODES) >= REQUESTS, flows
        assert L4Engine(RealNftOps(lab.names.host(4))).new_flows(lb_id) == {"tcp_80": 0}

        # A tier node lost whole: the router stops using it, every new request is answered.
        lab_cli("host-down", "h2", *base)
        tier.wait_next_hops(vip, {1, 3}, 30)
        answers = [curl(lab.names.client, f"http://{vip}:80/") for _ in range(REQUESTS)]
        assert answers == ["served by h4\n"] * REQUESTS

        api.call("DELETE", f"{V2}/loadbalancers/{lb_id}?cascade=true")
        tier.wait_next_hops(vip, set(), 60)
        shown = json.loads(lab_cli("tier", *base))
        assert all(shown["nodes"][f"h{i}"]["announced"] == [] for i in (1, 3)), shown
