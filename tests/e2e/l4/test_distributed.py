"""The distributed provider end to end: agents in node namespaces, clients on the nodes.

Needs root. ``dist_lab.py`` builds the namespaces: a control plane (``lbaas serve`` with
the amphora and distributed providers), two nodes each running ``lbaas agent`` (their L4
tables live in their own namespace; nothing is programmed in the host's) and three
backends answering TCP and UDP with their name. Through the Octavia API (and the
``openstack`` CLI for ``--provider distributed``) the test builds a distributed load
balancer and checks, from clients on both nodes: TCP and UDP spread over the members, each
flow decided on the client's own node (the nodes' rule counters, ``L4Engine.new_flows``),
a stopped member out of rotation and ERROR in the API, back and ONLINE when it returns,
SOURCE_IP sticking, an HTTP listener refused with a 400, a client on no node entering
through the one node chosen for it (ARP, ping, flows balanced there), and an amphora load balancer of
the same project on the same backends beside it, neither disturbing the other.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dist_lab import BACKEND_PORT, NODES, DistLab

from lbaas.l4 import nft
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps

pytestmark = [pytest.mark.root, pytest.mark.slow]
FLOWS = 24
LB = "/v2/lbaas/loadbalancers"


@pytest.fixture
def lab() -> Iterator[DistLab]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if shutil.which("haproxy") is None:
        pytest.skip("the amphora load balancer beside it needs haproxy")
    built = DistLab()
    try:
        built.build()
        for node in NODES:
            built.start_agent(node)
        built.start_control_plane()
        yield built
    finally:
        built.close()


def wait_for(
    check: Callable[[], bool],
    what: str,
    lab: DistLab,
    timeout: float = 60,
    detail: Callable[[], object] = lambda: "",
) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout}s {detail()}\n{lab.log('ctl')}")
        time.sleep(0.2)
    return time.monotonic() - started


def ok(lab: DistLab, method: str, path: str, body: Any = None) -> Any:
    status, answer = lab.call(method, path, body)
    assert status < 300, f"{method} {path}: {status} {answer}"
    return answer


def wait_active(lab: DistLab, lb_id: str) -> None:
    def active() -> bool:
        lb = ok(lab, "GET", f"{LB}/{lb_id}")["loadbalancer"]
        assert lb["provisioning_status"] != "ERROR", lb
        return bool(lb["provisioning_status"] == "ACTIVE")

    wait_for(active, f"{lb_id} ACTIVE", lab)


def member_statuses(lab: DistLab, lb_id: str, address: str | None = None) -> set[str]:
    """Operating statuses of the members (at ``address``) of the monitored pools."""
    tree = ok(lab, "GET", f"{LB}/{lb_id}/status")["statuses"]["loadbalancer"]
    return {
        m["operating_status"]
        for li in tree["listeners"]
        for p in li["pools"]
        for m in p["members"]
        if m["operating_status"] != "NO_MONITOR" and address in (None, m["address"])
    }


def pool_body(lab: DistLab, algorithm: str, *, sticky: bool = False, hm: bool = True) -> Any:
    body: dict[str, Any] = {
        "name": f"{algorithm}-{sticky}-{hm}",
        "protocol": "TCP",
        "lb_algorithm": algorithm,
        "members": [
            {"address": lab.address(f"b{i}"), "protocol_port": BACKEND_PORT,
             "subnet_id": lab.subnet_id}
            for i in range(1, lab.backends + 1)
        ],
    }  # fmt: skip
    if sticky:
        body["session_persistence"] = {"type": "SOURCE_IP"}
    if hm:
        body["healthmonitor"] = {"type": "TCP", "delay": 1, "timeout": 1, "max_retries": 1,
                                 "max_retries_down": 2}  # fmt: skip
    return body


def all_answer_without(lab: DistLab, name: str, clients: list[tuple[str, str]]) -> bool:
    """Whether 9 new flows from each (node, protocol) all get an answer, none from ``name``.

    While the stopped member is still in rotation some flows reach it and are refused (TCP)
    or unanswered (UDP): the client fails, which counts as "not yet".
    """
    vip = lab.address("vip")
    try:
        return all(name not in lab.names(node, proto, vip, 80, 9) for node, proto in clients)
    except AssertionError:
        return False


def node_flows(lab: DistLab, node: str, lb_id: str) -> dict[str, int]:
    """The node's own rule counters: new flows balanced there, per listener name."""
    return L4Engine(RealNftOps(lab.ns(node))).new_flows(lb_id)


def create_distributed(lab: DistLab) -> str:
    """The whole load balancer in one call (Octavia's single-call create)."""
    listeners = [
        {"protocol": "TCP", "protocol_port": 80, "default_pool": pool_body(lab, "MAGLEV")},
        {"protocol": "UDP", "protocol_port": 80,
         "default_pool": {**pool_body(lab, "SOURCE_IP_PORT"), "protocol": "UDP"}},
        {"protocol": "TCP", "protocol_port": 81,
         "default_pool": pool_body(lab, "SOURCE_IP_PORT", sticky=True, hm=False)},
    ]  # fmt: skip
    lb = ok(lab, "POST", LB, {"loadbalancer": {
        "name": "dist", "provider": "distributed", "vip_subnet_id": lab.subnet_id,
        "vip_address": lab.address("vip"), "listeners": listeners}})["loadbalancer"]  # fmt: skip
    wait_active(lab, lb["id"])
    return str(lb["id"])


def create_with_the_cli(lab: DistLab) -> str:
    """``openstack loadbalancer create --provider distributed`` (an empty one)."""
    cli = str(Path(sys.executable).with_name("openstack"))
    out = lab.in_ns(
        "ctl", cli, "--os-auth-type", "none", "--os-endpoint", "http://127.0.0.1:9876",
        "loadbalancer", "create", "--provider", "distributed", "--name", "by-cli",
        "--vip-subnet-id", lab.subnet_id, "-f", "value", "-c", "id",
    )  # fmt: skip
    return out.strip()


def test_distributed_load_balancer_on_two_nodes_beside_an_amphora(lab: DistLab) -> None:
    lb_id = create_distributed(lab)
    shown = ok(lab, "GET", f"{LB}/{lb_id}")["loadbalancer"]
    assert shown["provider"] == "distributed"
    vip, backends = lab.address("vip"), {f"b{i}" for i in range(1, lab.backends + 1)}
    wait_for(lambda: member_statuses(lab, lb_id) == {"ONLINE"},
             "members ONLINE", lab, detail=lambda: member_statuses(lab, lb_id))  # fmt: skip

    # TCP from n1, UDP from n2: spread over every member, decided on the client's node.
    tcp = lab.names("n1", "tcp", vip, 80, FLOWS)
    udp = lab.names("n2", "udp", vip, 80, FLOWS)
    assert set(tcp) == backends and set(udp) == backends, (Counter(tcp), Counter(udp))
    assert node_flows(lab, "n1", lb_id) == {"tcp_80": FLOWS, "udp_80": 0, "tcp_81": 0}
    assert node_flows(lab, "n2", lb_id) == {"tcp_80": 0, "udp_80": FLOWS, "tcp_81": 0}

    # SOURCE_IP: every connection of one client lands on one member, from either node.
    assert len(set(lab.names("n1", "tcp", vip, 81, 12))) == 1
    assert len(set(lab.names("n2", "tcp", vip, 81, 12))) == 1

    # An HTTP listener is L7: refused by this provider with Octavia's 400.
    status, body = lab.call("POST", "/v2/lbaas/listeners", {"listener": {
        "loadbalancer_id": lb_id, "protocol": "HTTP", "protocol_port": 8080}})  # fmt: skip
    assert status == 400 and "distributed" in body["faultstring"], body

    # A member stopped leaves rotation on both nodes (TCP monitor, delay 1 s, 2 failures)
    # and shows ERROR through the API; it comes back when it returns.
    lab.stop_backend(1)
    took = wait_for(lambda: all_answer_without(lab, "b1", [("n1", "tcp"), ("n2", "udp")]),
                    "b1 out", lab)  # fmt: skip
    print(f"b1 out of rotation {took:.1f}s after it stopped (delay x max_retries_down = 2 s)")
    b1 = lab.address("b1")
    wait_for(lambda: member_statuses(lab, lb_id, b1) == {"ERROR"}, "b1 ERROR", lab)
    lab.start_backend(1)
    wait_for(lambda: "b1" in lab.names("n2", "tcp", vip, 80, 12), "b1 back", lab)
    wait_for(lambda: member_statuses(lab, lb_id, b1) == {"ONLINE"}, "b1 ONLINE", lab)

    # An amphora load balancer (loopback mode, in the control plane's namespace) on the
    # same backends, same project: both serve; the nodes' tables are not touched by it.
    amphora = ok(lab, "POST", LB, {"loadbalancer": {
        "name": "amp", "provider": "amphora", "vip_subnet_id":
        "7f000a00-0000-4000-8000-000000000001",
        "listeners": [{"protocol": "TCP", "protocol_port": 80, "default_pool": {
            **pool_body(lab, "ROUND_ROBIN", hm=False)}}]}})["loadbalancer"]  # fmt: skip
    wait_active(lab, amphora["id"])
    assert amphora["project_id"] == shown["project_id"]
    amp_names = lab.names("ctl", "tcp", amphora["vip_address"], 80, 9)
    assert set(amp_names) == backends, amp_names
    chains = lab.in_ns("n1", "nft", "list", "chains", "ip").split()
    assert [c for c in chains if c.startswith("lb_")] == [nft.chain_name(lb_id)]
    assert set(lab.names("n1", "udp", vip, 80, FLOWS)) == backends

    # Deleting the distributed load balancer removes its table from every node.
    status, _ = lab.call("DELETE", f"{LB}/{lb_id}?cascade=true")
    assert status == 204
    wait_for(lambda: all(nft.chain_name(lb_id) not in lab.in_ns(n, "nft", "list", "chains", "ip")
                         for n in NODES), "chains gone", lab)  # fmt: skip
    assert set(lab.names("ctl", "tcp", amphora["vip_address"], 80, 6)) <= backends

    # A tenant picks the provider with the unmodified openstack CLI.
    by_cli = create_with_the_cli(lab)
    wait_active(lab, by_cli)
    assert ok(lab, "GET", f"{LB}/{by_cli}")["loadbalancer"]["provider"] == "distributed"


# An ICMP echo with lbaas's own PING probe (raw socket; root), from inside a namespace.
PING = (
    "import asyncio, sys\n"
    "from lbaas.l4.health.monitor import MonitorSpec, ProbeType, Target\n"
    "from lbaas.l4.health.probes import NetworkProber\n"
    "spec = MonitorSpec(ProbeType.PING, delay=1, timeout=5, rise=1, fall=1)\n"
    "target = Target('vip', sys.argv[1], 0, spec)\n"
    "print(asyncio.run(asyncio.wait_for(NetworkProber().probe(target), 5)))\n"
)


def vip_holders(lab: DistLab, vip: str) -> list[str]:
    """The namespaces (nodes and control plane) that hold the VIP as an address."""
    roles = ["ctl", *NODES]
    return [r for r in roles if f"inet {vip}/32" in lab.in_ns(r, "ip", "addr", "show", "dev", "lo")]


def test_a_client_on_no_node_enters_through_the_chosen_node(lab: DistLab) -> None:
    """ARP and ping answered by one entry node; its flows balanced there and masqueraded."""
    lb = ok(lab, "POST", LB, {"loadbalancer": {
        "name": "outside", "provider": "distributed", "vip_subnet_id": lab.subnet_id,
        "vip_address": lab.address("vip"), "listeners": [{"protocol": "TCP",
        "protocol_port": 80, "default_pool": pool_body(lab, "MAGLEV", hm=False)}]}})  # fmt: skip
    lb_id, vip = lb["loadbalancer"]["id"], lab.address("vip")
    wait_active(lab, lb_id)
    [entry] = vip_holders(lab, vip)  # exactly one, whichever the hash chose
    assert lab.in_ns("x1", sys.executable, "-c", PING, vip).strip() == "True"  # no ping(8) here
    mac = lab.in_ns(entry, "cat", "/sys/class/net/eth0/address").strip()
    neighbour = lab.in_ns("x1", "ip", "neigh", "show", vip)
    assert f"lladdr {mac}" in neighbour, (entry, mac, neighbour)
    names = lab.names("x1", "tcp", vip, 80, FLOWS)
    assert set(names) == {f"b{i}" for i in range(1, lab.backends + 1)}, Counter(names)
    assert node_flows(lab, entry, lb_id) == {"tcp_80": FLOWS}  # decided on the entry node
    others = [n for n in NODES if n != entry]
    assert all(node_flows(lab, n, lb_id) == {"tcp_80": 0} for n in others)
    status, _ = lab.call("DELETE", f"{LB}/{lb_id}?cascade=true")
    assert status == 204
    wait_for(lambda: vip_holders(lab, vip) == [], "VIP released", lab)
