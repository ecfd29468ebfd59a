"""The L4 tier in the lab: BGP announcements, ECMP over three nodes, a node lost and back.

One lab (router, nodes h1-h3, backends on h4, client) carries the whole story, since
building it is most of the cost. Times are not asserted: bench/l4_tier.py measures them;
the waits here only bound how long a broken tier may take to be found broken.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from tier_lab import BACKEND_PORTS, DSR_MEMBER_HOSTS, HOLD, NODES, PORT, TierLab, tier_lab

from lbaas.l4.host.real import RealNftOps
from lbaas.l4.service import L4Protocol

pytestmark = [pytest.mark.root, pytest.mark.slow]

BACKENDS = {f"b{port}" for port in BACKEND_PORTS}
_WAIT = 20.0


def _send(tier: TierLab, count: int) -> dict[int, int]:
    """Open ``count`` new connections, all answered by a backend; the flows per node."""
    before = tier.flows_per_node()
    names = tier.names(count)
    assert len(names) == count and set(names) <= BACKENDS
    after = tier.flows_per_node()
    return {index: after[index] - before[index] for index in NODES}


@pytest.fixture(scope="module")
def tier(module_lab_name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TierLab]:
    with tier_lab(module_lab_name, tmp_path_factory.mktemp("tier")) as built:
        yield built
    assert not [ns for ns in _namespaces() if ns.startswith(f"{module_lab_name}-")]


def test_dsr_spreads_keeps_no_state_and_flows_survive_a_node(tier: TierLab) -> None:
    # Every node hashes to the same members, which answer the client themselves.
    before = tier.dsr_flows_per_node()
    names = tier.names(45, tier.dsr_vip)
    assert set(names) == {f"d{host}" for host in DSR_MEMBER_HOSTS}
    after = tier.dsr_flows_per_node()
    spread = {index: after[index] - before[index] for index in NODES}
    assert sum(spread.values()) == 45 and all(spread[i] > 0 for i in NODES), spread

    # Held connections: no node has a conntrack entry for them (notrack on the DSR path).
    argv = ["ip", "netns", "exec", tier.lab.names.client, sys.executable, HOLD]
    hold = subprocess.Popen(
        [*argv, tier.dsr_vip, str(PORT), "30"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert hold.stdout is not None and hold.stdout.readline().strip() == "ready"
    for index in NODES:
        ops = RealNftOps(tier.lab.names.host(index))
        assert ops.count_flows(L4Protocol.TCP, tier.dsr_vip, PORT) == 0

    # h1 dies; its flows move to h2 and h3, which send them to the same members.
    tier.lab.host_down("h1")
    tier.tier.wait_next_hops(tier.dsr_vip, {2, 3}, _WAIT)
    out, _ = hold.communicate("go\n", timeout=60)
    assert json.loads(out.strip().splitlines()[-1]) == {"survived": 30, "total": 30}

    tier.lab.heal("h1")
    tier.tier.start_node(1)
    tier.tier.wait_next_hops(tier.dsr_vip, set(NODES), _WAIT)
    tier.tier.wait_next_hops(tier.vip, set(NODES), _WAIT)


def test_static_routes_spread_a_vip_without_bgp(tier: TierLab) -> None:
    # The router's route to the static VIP is the control plane's, not BIRD's.
    assert tier.tier.next_hops(tier.static_vip) == {1, 2, 3}
    assert tier.static_vip not in tier.tier.control("rtr").routes()
    before = tier.dsr_flows_per_node()
    assert set(tier.names(45, tier.static_vip)) == {f"d{host}" for host in DSR_MEMBER_HOSTS}
    after = tier.dsr_flows_per_node()
    assert all(after[i] > before[i] for i in NODES), (before, after)
    tier.tier.route_statically(tier.static_vip, [1, 3])
    assert tier.tier.next_hops(tier.static_vip) == {1, 3}
    before = tier.dsr_flows_per_node()
    assert len(tier.names(20, tier.static_vip)) == 20
    assert tier.dsr_flows_per_node()[2] == before[2]
    tier.tier.route_statically(tier.static_vip, NODES)


def test_a_vip_spreads_over_three_nodes_and_survives_losing_one(tier: TierLab) -> None:
    assert tier.tier.control("rtr").established() == {"h1", "h2", "h3"}
    assert tier.tier.next_hops(tier.vip) == {1, 2, 3}
    # The router hashes the 5-tuple: one client's connections reach every node, and
    # each node's engine balances them over every backend.
    assert set(tier.names(30)) == BACKENDS
    spread = _send(tier, 45)
    assert sum(spread.values()) == 45 and all(spread[i] > 0 for i in NODES), spread

    # Withdrawn on command: h1 stops announcing, the router stops sending to it.
    tier.tier.announce(1, [])
    tier.tier.wait_next_hops(tier.vip, {2, 3}, _WAIT)
    assert _send(tier, 20)[1] == 0
    tier.tier.announce(1, [tier.vip, tier.dsr_vip])
    tier.tier.wait_next_hops(tier.vip, {1, 2, 3}, _WAIT)

    # h2 dies (BIRD SIGKILLed, links down): its route goes, new connections succeed.
    tier.lab.host_down("h2")
    tier.tier.wait_next_hops(tier.vip, {1, 3}, _WAIT)
    tier.tier.wait_sessions({1, 3})
    routes = subprocess.run(
        ["ip", "-n", tier.lab.names.router, "route", "show", f"{tier.vip}/32"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert routes.count("nexthop via") == 2
    after_loss = _send(tier, 30)
    assert after_loss[2] == 0 and after_loss[1] > 0 and after_loss[3] > 0

    # h2 comes back: links up, BIRD started again; it takes new flows again.
    tier.lab.heal("h2")
    tier.tier.start_node(2)
    tier.tier.wait_next_hops(tier.vip, {1, 2, 3}, _WAIT)
    assert _send(tier, 45)[2] > 0

    # h3 loses its link while its BIRD runs on: BFD (or the hold timer) takes it out.
    tier.lab.partition("h3")
    tier.tier.wait_next_hops(tier.vip, {1, 2}, _WAIT)
    assert _send(tier, 20)[3] == 0


def _namespaces() -> list[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in listing.stdout.splitlines() if line]
