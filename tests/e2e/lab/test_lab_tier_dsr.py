"""A distributed load balancer through the L4 tier in direct server return, end to end.

``lbaas lab up --hosts 3 --tier 3 --tier-return dsr``: the control plane's
``tier.return_mode`` is ``dsr``, so the specs the distributed provider sends to the group's
agents (h1-h3) say ``return_mode: dsr`` and each agent programs the DSR shape itself (a mark
per Maglev slot, a policy route per member via the member on the member network, no
conntrack) before it announces the VIP. The two members are namespaces with no agent, wired
by the lab as an operator wires real backends (``lbaas.lab.tier_dsr.add_member``: the VIP on
``lo`` with ARP off for it, default route via the router).

The client holds HELD established connections spread over the three nodes; h2 is lost
whole (``host-down``); every held connection still answers (the flows ECMP moved to h1 and
h3 are hashed there to the same member, with nothing to pick up). Replies never cross a
node: the nodes' forward counters see packets to the VIP and none from it, while the router
sees the VIP's replies arrive from the member network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from lab_api import V2, LabApi, host_list

from lbaas.agent.host.commands import run_command
from lbaas.l4.host.real import RealNftOps
from lbaas.lab import names as n
from lbaas.lab.addresses import FIRST_HOST
from lbaas.lab.lab import Lab
from lbaas.lab.services import services_status
from lbaas.lab.tier import LabTier
from lbaas.lab.tier_dsr import LabDsr, add_member
from lbaas.model.enums import HostStatus
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow]

E2E = Path(__file__).resolve().parents[1]
PEERS = str(E2E / "l4" / "l4_peers.py")
HOLD = str(E2E / "tier" / "tier_hold.py")
NODES = (1, 2, 3)
PORT = 80
HELD = 60
#: Host numbers of the two members on the member network (the hosts are FIRST_HOST + i).
MEMBERS = {"dsr1": FIRST_HOST + 40, "dsr2": FIRST_HOST + 41}
COUNTERS = "t2dsrcount"


def _lab(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "lab", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _count_forwarded(namespace: str, vip: str, interface: str | None = None) -> None:
    """A table of two forward counters in ``namespace``: packets to ``vip`` and from it."""
    only = f'iifname "{interface}" ' if interface else ""
    RealNftOps(namespace).load(
        f"table ip {COUNTERS} {{\n"
        "  chain forward {\n"
        "    type filter hook forward priority 0; policy accept;\n"
        f'    ip daddr {vip} tcp dport {PORT} counter comment "to"\n'
        f'    {only}ip saddr {vip} tcp sport {PORT} counter comment "from"\n'
        "  }\n"
        "}\n"
    )


def _forwarded(namespace: str) -> dict[str, int]:
    listing = RealNftOps(namespace).list_chain_json(COUNTERS, "forward") or {}
    counts: dict[str, int] = {}
    for item in listing.get("nftables", []):
        rule = item.get("rule")
        for expression in rule.get("expr", []) if rule else []:
            if "counter" in expression:
                counts[rule["comment"]] = int(expression["counter"]["packets"])
    return counts


def _hold(namespace: str, vip: str, count: int) -> subprocess.Popen[str]:
    hold = subprocess.Popen(
        ["ip", "netns", "exec", namespace, sys.executable, HOLD, vip, str(PORT), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert hold.stdout is not None and hold.stdout.readline().strip() == "ready"
    return hold


def _answers(hold: subprocess.Popen[str]) -> int:
    out, _ = hold.communicate("go\n", timeout=60)
    return int(json.loads(out.strip().splitlines()[-1])["survived"])


def test_established_flows_survive_a_node_loss_with_direct_server_return(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    name = f"r{uuid.uuid4().hex[:7]}"
    base = ["--name", name, "--state-dir", str(lab_dir)]
    lab = Lab(name, lab_dir)
    dsr = LabDsr(run_command)
    try:
        _lab("up", "--hosts", "3", "--tier", "3", "--tier-return", "dsr", "--quiet", *base)
        services = services_status(lab)
        api = LabApi(services["api_namespace"], services["api"])
        wait_until(
            lambda: (
                [h["status"] for h in host_list(lab.names.control, services["settings"]).values()]
                == [HostStatus.UP] * 3
            ),
            timeout=60,
            what="the three hosts UP",
        )
        body = {
            "name": "dsr",
            "vip_subnet_id": services["vip_subnet_id"],
            "provider": "distributed",
        }
        created = api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})["loadbalancer"]
        lb_id, vip = str(created["id"]), str(created["vip_address"])
        api.wait_active(lb_id)

        members = {}
        for suffix, host in MEMBERS.items():
            members[suffix] = add_member(lab, suffix, host, [vip])
            namespace = f"{lab.names.prefix}{suffix}"
            server = [sys.executable, PEERS, "server", suffix, "0.0.0.0", str(PORT)]
            sleepers.append(subprocess.Popen(["ip", "netns", "exec", namespace, *server]))
        listener = api.create(
            lb_id, "listeners", {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": PORT}
        )
        pool = api.create(
            lb_id,
            "pools",
            {"listener_id": listener, "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
        )
        for address in members.values():
            member = {
                "address": address,
                "protocol_port": PORT,
                "subnet_id": services["member_subnet_ids"]["m0"],
            }
            api.create(lb_id, f"pools/{pool}/members", member)
        tier = LabTier(lab, NODES)
        tier.wait_next_hops(vip, set(NODES), 60)
        hosts = {index: lab.names.host(index) for index in NODES}
        # The agents programmed the DSR table (both members' slots) before announcing.
        wait_until(
            lambda: all(dsr.new_flows(hosts[i]) for i in NODES), timeout=30, what="DSR tables"
        )
        for index in NODES:
            _count_forwarded(hosts[index], vip)
        _count_forwarded(lab.names.router, vip, n.inner_interface("m0"))

        hold = _hold(lab.names.client, vip, HELD)
        flows = {i: sum(dsr.new_flows(hosts[i]).values()) for i in NODES}
        assert sum(flows.values()) >= HELD and all(flows[i] > 0 for i in NODES), flows

        # A tier node lost whole, with flows of its own: the router moves them to h1 and h3.
        _lab("host-down", "h2", *base)
        tier.wait_next_hops(vip, {1, 3}, 30)
        survived = _answers(hold)
        assert survived == HELD, (survived, flows)
        fresh = _hold(lab.names.client, vip, 10)  # new connections succeed too
        assert _answers(fresh) == 10

        # The replies went straight from the members to the router: no node forwarded one.
        seen = {i: _forwarded(hosts[i]) for i in NODES}
        assert all(seen[i]["from"] == 0 for i in NODES), seen
        assert all(seen[i]["to"] > 0 for i in NODES), seen
        router = _forwarded(lab.names.router)
        assert router["from"] > 0, router

        api.call("DELETE", f"{V2}/loadbalancers/{lb_id}?cascade=true")
        tier.wait_next_hops(vip, set(), 60)
        wait_until(
            lambda: all(not dsr.new_flows(hosts[i]) for i in (1, 3)),
            timeout=30,
            what="the DSR rules gone",
        )
    finally:
        _lab("down", *base)
