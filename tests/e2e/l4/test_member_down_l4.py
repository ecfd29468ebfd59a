"""A pool's member-down policy in the kernel engine, for real: a held TCP connection and a
held UDP flow to a member that its health check finds down (the member still serves).

The engine's input is built the way a node builds it, from the wire spec
(``L4ListenerSpec.member_down``, through ``lbaas.l4node.manager.l4_service``), so what the
controller sends is what acts. keep: both flows stay on the member; cut: the TCP
connection's next packet meets a reset; reroute: the UDP flow's next datagram is answered
by another member.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from l4_lab import VIP, HeldConnection, L4Lab, built_lab

from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps
from lbaas.l4node.manager import l4_service
from lbaas.wire.l4 import L4ListenerSpec, L4MemberSpec, L4ServiceSpec, MemberDown

pytestmark = [pytest.mark.root, pytest.mark.slow]
LB_ID = "5a1d7c3e-2b4f-4e8a-9c6d-1f0e3b2a4c55"


@pytest.fixture
def lab() -> Iterator[L4Lab]:
    with built_lab() as built:
        yield built


def spec(lab: L4Lab, tcp: MemberDown, udp: MemberDown) -> L4ServiceSpec:
    members = tuple(L4MemberSpec(id=m.key, address=m.address, port=m.port, weight=1)
                    for m in lab.members())  # fmt: skip
    listeners = tuple(
        L4ListenerSpec(
            id=f"{protocol}-{port}",
            protocol=protocol,
            port=port,
            hash_key="five_tuple",
            table_size=251,
            members=members,
            member_down=policy,
        )  # fmt: skip
        for protocol, port, policy in (("tcp", 80, tcp), ("udp", 53, udp))
    )
    return L4ServiceSpec(version=1, loadbalancer_id=LB_ID, vip=VIP, listeners=listeners)


def held_flows(lab: L4Lab, sent: L4ServiceSpec) -> tuple[HeldConnection, str, HeldConnection, str]:
    """Apply ``sent`` with every member healthy, hold a TCP connection and a UDP flow, then
    mark the member of each down: the connection, its member, the flow, its member."""
    engine = L4Engine(RealNftOps(lab.lb))
    engine.apply(l4_service(sent, {}))
    tcp, udp = lab.hold(80), lab.hold(53, "hold-udp")
    on_tcp, on_udp = tcp.greeting(), udp.greeting()
    engine.apply(l4_service(sent, {on_tcp: False, on_udp: False}))
    return tcp, on_tcp, udp, on_udp


def test_keep_leaves_both_flows_on_the_member_found_down(lab: L4Lab) -> None:
    tcp, on_tcp, udp, on_udp = held_flows(lab, spec(lab, "keep", "keep"))
    assert tcp.ask("after") == f"{on_tcp} after"
    assert udp.ask("?") == on_udp


def test_cut_resets_tcp_and_reroute_moves_udp(lab: L4Lab) -> None:
    tcp, _, udp, on_udp = held_flows(lab, spec(lab, "cut", "reroute"))
    assert tcp.ask("after").startswith("ERROR")
    moved = udp.ask("?")
    assert moved != on_udp and moved in {m.key for m in lab.members()}
