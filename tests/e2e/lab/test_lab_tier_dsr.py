"""A distributed load balancer through the L4 tier in direct server return, end to end.

``lbaas lab up --hosts 3 --tier 3`` (``provider_tier``): the deployment answers in NAT, and
the load balancer's flavor asks for ``{"tier_return_mode": "dsr", "tier_group": "g0"}``, so
the specs the distributed provider sends to the group's agents (h1-h3) say
``return_mode: dsr`` and each agent programs the DSR shape itself
(a mark per Maglev slot, a policy route per member via the member on the member network, no
conntrack) before it announces the VIP. The two members are namespaces with no agent, wired
by the lab as an operator wires real backends (``lbaas.lab.tier_dsr.add_member``: the VIP on
``lo`` with ARP off for it, default route via the router).

The client holds HELD established connections spread over the three nodes; h2 is lost
whole (``host-down``); every held connection still answers (the flows ECMP moved to h1 and
h3 are hashed there to the same member, with nothing to pick up). Replies never cross a
node: the nodes' forward counters see packets to the VIP and none from it, while the router
sees the VIP's replies arrive from the member network. Deleting the load balancer withdraws
the VIP and empties the nodes' DSR tables.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from lab_api import V2
from provider_tier import (
    NODES,
    answers,
    build,
    count_forwarded,
    forwarded,
    hold,
    lab_cli,
    prepare,
)

from lbaas.host.commands import run_command
from lbaas.lab import names as n
from lbaas.lab.tier_dsr import LabDsr
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow]

HELD = 60


def test_established_flows_survive_a_node_loss_with_direct_server_return(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    dsr = LabDsr(run_command)
    built = prepare(lab_dir, "dsr", sleepers)
    try:
        build(built)
        lab, vip, api = built.lab, built.vip, built.api
        assert api is not None
        hosts = {index: built.host(index) for index in NODES}
        # The agents programmed the DSR table (both members' slots) before announcing.
        assert all(dsr.new_flows(hosts[i]) for i in NODES)
        for index in NODES:
            count_forwarded(hosts[index], vip)
        count_forwarded(lab.names.router, vip, n.inner_interface("m0"))

        held = hold(lab.names.client, vip, HELD)
        flows = {i: built.flows(i) for i in NODES}
        assert sum(flows.values()) >= HELD and all(flows[i] > 0 for i in NODES), flows

        # A tier node lost whole, with flows of its own: the router moves them to h1 and h3.
        lab_cli("host-down", "h2", *built.base)
        built.tier.wait_next_hops(vip, {1, 3}, 30)
        survived = answers(held)
        assert survived == HELD, (survived, flows)
        assert answers(hold(lab.names.client, vip, 10)) == 10  # new connections succeed too

        # The replies went straight from the members to the router: no node forwarded one.
        seen = {i: forwarded(hosts[i]) for i in NODES}
        assert all(seen[i]["from"] == 0 for i in NODES), seen
        assert all(seen[i]["to"] > 0 for i in NODES), seen
        router = forwarded(lab.names.router)
        assert router["from"] > 0, router

        api.call("DELETE", f"{V2}/loadbalancers/{built.lb_id}?cascade=true")
        built.tier.wait_next_hops(vip, set(), 60)
        wait_until(
            lambda: all(not dsr.new_flows(hosts[i]) for i in (1, 3)),
            timeout=30,
            what="the DSR rules gone",
        )
    finally:
        lab_cli("down", *built.base)
