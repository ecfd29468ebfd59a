"""Issue 33's ``--provider lbaas-distributed`` through a real Octavia: the stock CLI builds
a TCP load balancer on lbaas's kernel L4 provider, and a node's nftables serve the VIP.

Needs root. One node suffices (no lab): ``distributed_node.py`` runs ``lbaas serve`` and
one ``lbaas agent`` (the provider's only node) with two backends in a namespace of the
test, the VIP and members on that namespace's loopback; Octavia's API and driver agent run
on the host and reach serve through a forwarded port. Clients run on the node, where the
node's NAT output chain balances their flows.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from lbaas.l4 import nft
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID
from tests.e2e.octavia.both_sides import gone, member_status, nothing_left
from tests.e2e.octavia.conftest import PROJECT, Front, octavia_for
from tests.e2e.octavia.distributed_node import BACKEND_PORT, DistributedNode, distributed_node
from tests.e2e.octavia.tcp_build import PORT, build_tcp
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.root]
VIP = "127.16.0.9"
FLOWS = 20


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[DistributedNode, Front]]:
    if os.geteuid() != 0:
        pytest.skip("the node's network namespace needs root")
    with distributed_node() as node, octavia_for(node.url) as front:
        yield node, front


def test_a_tcp_load_balancer_of_provider_lbaas_distributed_through_octavias_cli(
    world: tuple[DistributedNode, Front],
) -> None:
    node, front = world
    members = [(node.backend_address(i), BACKEND_PORT) for i in (1, 2)]
    lb = build_tcp(front.cli, LOOPBACK_SUBNET_ID, VIP, members)
    lbaas_side = front.lbaas_api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]
    assert (lbaas_side["provider"], lbaas_side["project_id"]) == ("distributed", PROJECT)
    assert lbaas_side["vip_address"] == VIP
    both = {node.backend_address(1), node.backend_address(2)}
    wait_until(
        lambda: set(member_status(front, lb["id"], "address").values()) == {"ONLINE"},
        30,
        "both members ONLINE in Octavia",
    )
    assert set(member_status(front, lb["id"], "address")) == both
    chain = nft.chain_name(lb["id"])
    assert chain in node.nft_chains(), node.nft_chains()

    names = node.names(VIP, PORT, FLOWS)
    assert sorted(set(names)) == ["b1", "b2"], names
    wait_until(
        lambda: (
            front.cli.json("loadbalancer", "stats", "show", lb["id"])["total_connections"] >= FLOWS
        ),
        30,
        "Octavia's stats show to count the node's flows",
    )

    node.stop_backend(2)
    killed = time.monotonic()
    seen: dict[str, float] = {}

    def down_in_both() -> bool:
        for name, side in (("lbaas", lbaas_view), ("octavia", front)):
            status = member_status(side, lb["id"], "address")[node.backend_address(2)]
            if status in ("ERROR", "OFFLINE"):
                seen.setdefault(name, time.monotonic() - killed)
        return "octavia" in seen

    lbaas_view = Front(front.octavia, front.cli, front.lbaas_api, front.lbaas_api)
    wait_until(down_in_both, 60, "the killed backend's member ERROR or OFFLINE in Octavia")
    print(f"member down {seen} s after the kill")
    assert seen["octavia"] <= 10, f"not within 10 s of the kill: {seen}"
    status = front.cli.run("loadbalancer", "status", "show", lb["id"])
    assert '"operating_status": "ERROR"' in status or '"operating_status": "OFFLINE"' in status
    wait_until(
        lambda: set(node.names(VIP, PORT, 6)) == {"b1"},
        30,
        "new flows only to the member left",
    )

    front.cli.run("loadbalancer", "delete", "--cascade", "--wait", lb["id"])
    wait_until(lambda: gone(front, lb["id"]), 30, "the load balancer gone on both sides")
    nothing_left(front)
    wait_until(
        lambda: chain not in node.nft_chains(),
        30,
        "the load balancer's nftables chain removed",
    )
