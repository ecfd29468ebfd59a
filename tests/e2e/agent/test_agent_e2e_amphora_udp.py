"""A UDP listener on a netns amphora, balanced by the L4 engine in its namespace (issue 12.3).

Needs root. Two UDP echo backends (each answers its own name) sit on the member network;
a client namespace on the VIP network sends each request from a new socket, so each is a
new flow. It shows flows spread over both members (5-tuple hash), a flow moved off its
removed member by the member-down policy reroute, SOURCE_IP sending every
flow of one client to one member, a removed member getting no new flow, a port no
listener serves being dropped, and the listener's counters (new flows, bytes both ways)
in the agent's health report, which is what ``/stats`` is summed from.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from agent_e2e_support import haproxy_config, report_of
from scratch_net import ScratchNet

from lbaas.amphora.plumbing import bridge_name, plan_plumbing
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.host.real import RealHostOps
from lbaas.model.graph import ListenerId, PoolId
from lbaas.model.health import MemberState
from lbaas.wire.amphora import AmphoraSpec, MemberNetwork, NetworkSpec, VipSpec
from lbaas.wire.datapath import ListenerPort, UdpListener, UdpMember, VipFilter
from tests.support import udp_echo
from tests.support.scratch_subnets import pick_subnets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]
TCP_PORT, UDP_PORT, CLOSED_UDP_PORT, ECHO_PORT = 8080, 5300, 5301, 7000
LISTENER, POOL = "udp-listener-1", "udp-pool-1"


def _spec(
    tag: str, root: Path, nets: list[str], listener: UdpListener, version: int
) -> AmphoraSpec:
    vip = f"{nets[0]}.10"
    return AmphoraSpec(
        version=version,
        loadbalancer_id=f"lb-{tag}",
        **haproxy_config(root, vip, TCP_PORT, []),
        vip=VipSpec(address=vip, subnet_cidr=f"{nets[0]}.0/24", network_id=f"vip-{tag}"),
        network=NetworkSpec(
            member_networks=(
                MemberNetwork(
                    network_id=f"mem-{tag}", subnet_cidr=f"{nets[1]}.0/24", address=f"{nets[1]}.10"
                ),
            )
        ),
        vip_filter=VipFilter(
            listener_ports=(
                ListenerPort(protocol="tcp", port=TCP_PORT),
                ListenerPort(protocol="udp", port=UDP_PORT),
            )
        ),
        udp_listeners=(listener,),
    )


def _listener(nets: list[str], names: tuple[str, ...], hash_key: str) -> UdpListener:
    members = tuple(
        UdpMember(key=name, address=f"{nets[1]}.{11 + index}", port=ECHO_PORT)
        for index, name in enumerate(("m1", "m2"))
        if name in names
    )
    return UdpListener(
        listener_id=LISTENER,
        pool_id=POOL,
        port=UDP_PORT,
        hash_key=hash_key,  # type: ignore[arg-type]
        table_size=251,
        members=members,
    )


def test_udp_listener_spreads_sticks_and_drains(
    host: RealHostOps, testnet: ScratchNet, short_dir: Path
) -> None:
    nets = [str(n.network_address).rsplit(".", 1)[0] for n in pick_subnets(2)]
    amphora_id = f"amp-{testnet.tag}"
    manager = AmphoraRegistry(short_dir / "amphorae", host, mode="netns")
    root = manager.root / amphora_id
    spec = _spec(testnet.tag, root, nets, _listener(nets, ("m1", "m2"), "five_tuple"), 1)
    plan = plan_plumbing(amphora_id, spec)
    member_bridge = next(leg.bridge for leg in plan.legs if leg.network_id != spec.vip.network_id)
    vip = spec.vip.address
    client = f"{nets[0]}.20"
    sent = 0
    # Every flow from its own source port, below the kernel's ephemeral range: a reused
    # port would match an earlier flow's conntrack entry and go to that flow's member.
    source_ports = iter(range(20000, 32700, 50))  # no ask sends more than 50

    def ask(
        count: int, port: int = UDP_PORT, flow_port: int | None = None
    ) -> collections.Counter[str]:
        """``count`` new flows, from ``flow_port`` on if given (the same port again: the
        same flow, new only if the kernel forgot it)."""
        nonlocal sent
        sent += count if port == UDP_PORT else 0
        return udp_echo.ask(
            lambda argv: host.run_in_namespace(client_ns, argv, timeout=60),
            client,
            vip,
            port,
            count,
            flow_port or next(source_ports),
        )

    try:
        manager.put(amphora_id, spec)
        backend_ns = testnet.plug(host, "bk", member_bridge, f"{nets[1]}.11/24", f"{nets[1]}.12/24")
        for index, name in enumerate(("m1", "m2")):
            address = f"{nets[1]}.{11 + index}"
            testnet.start(backend_ns, udp_echo.echo_argv(name, address, ECHO_PORT))
        client_ns = testnet.plug(host, "cl", bridge_name(spec.vip.network_id), f"{client}/24")
        wait_until(lambda: ask(1)["timeout"] == 0, timeout=30, what="the UDP echo through the VIP")

        spread = ask(40)
        assert spread["timeout"] == 0 and spread["m1"] > 0 and spread["m2"] > 0, spread
        assert ask(3, CLOSED_UDP_PORT) == {"timeout": 3}  # dropped on the VIP leg

        # One flow (a fixed source port) whose member is removed from a pool whose
        # member-down policy is reroute: its next datagram is answered by the other member.
        flow = next(source_ports)
        (member,) = ask(1, flow_port=flow)
        rest = _listener(nets, (({"m1", "m2"} - {member}).pop(),), "five_tuple")
        rest = rest.model_copy(update={"member_down": "reroute"})
        manager.put(amphora_id, _spec(testnet.tag, root, nets, rest, 2))
        assert ask(1, flow_port=flow) == {rest.members[0].key: 1}

        sticky = _listener(nets, ("m1", "m2"), "source_address")
        manager.put(amphora_id, _spec(testnet.tag, root, nets, sticky, 3))
        stuck = ask(20)
        assert len(stuck) == 1 and "timeout" not in stuck, stuck

        drained = _listener(nets, ("m1",), "five_tuple")
        manager.put(amphora_id, _spec(testnet.tag, root, nets, drained, 4))
        assert ask(30) == {"m1": 30}

        report = report_of(manager, amphora_id)
        counters = report.listeners[ListenerId(LISTENER)].counters
        # Every flow was a new one, counted once across the two table replacements.
        assert counters.total_connections == sent
        assert counters.bytes_in > 0 and counters.bytes_out > counters.bytes_in
        # The flows just sent are still in conntrack (30 s at least): live ones.
        assert 30 <= counters.active_connections <= sent
        pool = report.pools[PoolId(POOL)]
        assert dict(pool.members) == {"m1": MemberState.NO_CHECK}
    finally:
        testnet.remove(host)
        manager.delete(amphora_id)
        for leg in plan.legs:
            host.delete_link(leg.bridge)
