"""A netns amphora networked as a real one: VIP filter, source routing, MTU (issue 11 point 5).

Needs root. The amphora has a VIP leg and a member leg; the test plugs a client namespace
into the VIP network (it holds the VIP subnet's gateway address and a "far" address beyond
every connected subnet) and a backend namespace into the member network (the member
subnet's gateway, the member, and its own far address). It shows that a listener port
answers while another port of the VIP is dropped (a timeout, not a reset), that adding a
listener opens its port, that a request to the member-leg address from beyond its gateway
is answered through the member leg (with one main-table default route it would leave by
the VIP leg and never arrive), and that the networks' MTUs are on the legs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agent_e2e_support import Server, haproxy_config
from scratch_net import BACKEND_PORT, ScratchNet

from lbaas.amphora.plumbing import bridge_name, plan_plumbing
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.amphora.vip_filter import TABLE, byte_counters
from lbaas.host.commands import run_command
from lbaas.host.real import RealHostOps
from lbaas.wire.amphora import AmphoraSpec, MemberNetwork, NetworkSpec, VipSpec
from lbaas.wire.datapath import ListenerPort, VipFilter
from tests.support.scratch_subnets import pick_subnets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]
PORT, SECOND_PORT, CLOSED_PORT = 8080, 8081, 8082
VIP_MTU, MEMBER_MTU = 1400, 1450
# Connect from a given source; print what happened: the body, "timeout" or "refused".
CONNECT = """
import socket, sys
source, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(); s.settimeout(float(sys.argv[4])); s.bind((source, 0))
try:
    s.connect((host, port))
    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n"); print(s.recv(4096).decode().split("\\r\\n\\r\\n")[-1])
except socket.timeout: print("timeout")
except ConnectionRefusedError: print("refused")
"""
# One ICMP echo from a given source (no ping binary on this machine); prints "reply" or "none".
PING = """
import socket, struct, sys
source, target = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.bind((source, 0)); s.settimeout(2)
header = struct.pack("!BBHHH", 8, 0, 0, 0x4C42, 1) + b"lbaas!"  # an even length
total = sum(struct.unpack("!7H", header))
total = (total >> 16) + (total & 0xFFFF); total += total >> 16
packet = header[:2] + struct.pack("!H", ~total & 0xFFFF) + header[4:]
s.sendto(packet, (target, 0))
try:
    while True:
        data, peer = s.recvfrom(1024)
        if peer[0] == target and data[20] == 0: print("reply"); break
except socket.timeout: print("none")
"""


def _prefixes(count: int) -> list[str]:
    return [str(net.network_address).rsplit(".", 1)[0] for net in pick_subnets(count)]


def _spec(
    tag: str, root: Path, nets: list[str], ports: tuple[int, ...], version: int
) -> AmphoraSpec:
    vip_prefix, member_prefix = nets[0], nets[1]
    vip = f"{vip_prefix}.10"
    extra_binds = [f"bind {vip}:{port}" for port in ports[1:]]
    return AmphoraSpec(
        version=version,
        loadbalancer_id=f"lb-{tag}",
        **haproxy_config(
            root,
            vip,
            ports[0],
            [Server("m1", f"{member_prefix}.11", BACKEND_PORT)],
            frontend_lines=extra_binds,
        ),
        vip=VipSpec(
            address=vip,
            subnet_cidr=f"{vip_prefix}.0/24",
            network_id=f"vip-{tag}",
            gateway=f"{vip_prefix}.1",
            mtu=VIP_MTU,
        ),
        network=NetworkSpec(
            member_networks=(
                MemberNetwork(
                    network_id=f"mem-{tag}",
                    subnet_cidr=f"{member_prefix}.0/24",
                    address=f"{member_prefix}.10",
                    gateway=f"{member_prefix}.1",
                    mtu=MEMBER_MTU,
                ),
            )
        ),
        vip_filter=VipFilter(
            listener_ports=tuple(ListenerPort(protocol="tcp", port=port) for port in ports)
        ),
    )


def _connect(host: RealHostOps, namespace: str, source: str, target: str, port: int) -> str:
    argv = [sys.executable, "-c", CONNECT, source, target, str(port), "1.5"]
    return host.run_in_namespace(namespace, argv, timeout=20).stdout.strip()


def _ping(host: RealHostOps, namespace: str, source: str, target: str) -> str:
    argv = [sys.executable, "-c", PING, source, target]
    return host.run_in_namespace(namespace, argv, timeout=20).stdout.strip()


def _mtu(host: RealHostOps, namespace: str | None, link: str) -> int:
    argv = ["ip", "-j", "link", "show", "dev", link]
    out = host.run_in_namespace(namespace, argv) if namespace else run_command(argv)
    return int(json.loads(out.stdout)[0]["mtu"])


def test_vip_filter_source_routing_and_mtu(
    host: RealHostOps, testnet: ScratchNet, short_dir: Path
) -> None:
    nets = _prefixes(4)  # VIP, member, the client's far network, the backend's far network
    client_far, backend_far = f"{nets[2]}.2", f"{nets[3]}.2"
    amphora_id = f"amp-{testnet.tag}"
    manager = AmphoraRegistry(short_dir / "amphorae", host, mode="netns")
    root = manager.root / amphora_id
    spec = _spec(testnet.tag, root, nets, (PORT,), version=1)
    plan = plan_plumbing(amphora_id, spec)
    vip_leg = next(leg for leg in plan.legs if leg.network_id == spec.vip.network_id)
    member_leg = next(leg for leg in plan.legs if leg is not vip_leg)
    vip = spec.vip.address
    try:
        manager.put(amphora_id, spec)
        backend_ns = testnet.plug(
            host,
            "b1",
            member_leg.bridge,
            f"{nets[1]}.1/24",
            f"{nets[1]}.11/24",
            f"{backend_far}/32",
        )
        testnet.serve(backend_ns, f"{nets[1]}.11", "backend-b1", short_dir)
        client_ns = testnet.plug(
            host, "cl", bridge_name(spec.vip.network_id), f"{nets[0]}.1/24", f"{client_far}/32"
        )
        # The client reaches the VIP from beyond the VIP subnet: the reply goes via its gateway.
        wait_until(
            lambda: _connect(host, client_ns, client_far, vip, PORT) == "backend-b1",
            timeout=60,
            what="the listener port answering through the VIP",
        )
        # A port no listener serves is dropped on the VIP leg: no answer at all, not a reset.
        assert _connect(host, client_ns, client_far, vip, CLOSED_PORT) == "timeout"
        assert _connect(host, client_ns, client_far, vip, SECOND_PORT) == "timeout"
        listing = ["nft", "-j", "list", "chain", "ip", TABLE, "vip_in"]
        dropped = byte_counters(json.loads(host.run_in_namespace(plan.namespace, listing).stdout))
        assert dropped["vip_drop"] > 0

        # Adding a listener opens its port (and only its port).
        manager.put(amphora_id, _spec(testnet.tag, root, nets, (PORT, SECOND_PORT), version=2))
        assert _connect(host, client_ns, client_far, vip, SECOND_PORT) == "backend-b1"
        assert _connect(host, client_ns, client_far, vip, CLOSED_PORT) == "timeout"

        # A request to the member-leg address from beyond the member gateway is answered
        # through the member leg (the main table's default route points at the VIP leg,
        # where the reset would reach the client namespace, which routes nothing: a timeout).
        member_address = f"{nets[1]}.10"
        assert _connect(host, backend_ns, backend_far, member_address, CLOSED_PORT) == "refused"
        assert _ping(host, backend_ns, backend_far, member_address) == "reply"
        route = ["ip", "-j", "route", "get", backend_far, "from", f"{nets[1]}.10"]
        chosen = json.loads(host.run_in_namespace(plan.namespace, route).stdout)[0]
        assert chosen["dev"] == member_leg.amphora_end
        route = ["ip", "-j", "route", "get", backend_far, "from", vip]
        assert json.loads(host.run_in_namespace(plan.namespace, route).stdout)[0]["dev"] == (
            vip_leg.amphora_end
        )
        # ICMP to the VIP is let in.
        assert _ping(host, client_ns, client_far, vip) == "reply"

        assert _mtu(host, plan.namespace, vip_leg.amphora_end) == VIP_MTU
        assert _mtu(host, plan.namespace, member_leg.amphora_end) == MEMBER_MTU
        assert _mtu(host, None, member_leg.host_end) == MEMBER_MTU
    finally:
        testnet.remove(host)
        manager.delete(amphora_id)
        for leg in plan.legs:
            host.delete_link(leg.bridge)
