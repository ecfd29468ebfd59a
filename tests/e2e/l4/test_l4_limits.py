"""A listener's connection limit and UDP idle timeout, enforced by real nftables.

The L4 engine in a namespace between a client and three backends (``l4_lab``): the flow
past the limit gets nothing (its first packet is dropped), a flow that ended frees its
place, and a UDP flow's conntrack entry follows the listener's idle timeout while another
listener's keeps the kernel's own. Needs root; the namespaces and processes go even when a
test fails.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from l4_lab import VIP, L4Lab, built_lab, run

from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps
from lbaas.l4.service import L4Listener, L4Protocol, L4Service

pytestmark = [pytest.mark.root, pytest.mark.slow]
LB_ID = "5b0c6f0e-3f2a-4d61-9c07-8e1a2d4b6c99"
SIZE = 251


@pytest.fixture
def lab() -> Iterator[L4Lab]:
    with built_lab() as built:
        yield built


def test_a_tcp_flow_past_the_limit_gets_nothing_until_one_ends(lab: L4Lab) -> None:
    listener = L4Listener(L4Protocol.TCP, 80, lab.members(), table_size=SIZE, connection_limit=2)
    L4Engine(RealNftOps(lab.lb)).apply(L4Service(LB_ID, VIP, (listener,)))
    first, second = lab.hold(80), lab.hold(80)
    assert first.greeting().startswith("b") and second.greeting().startswith("b")
    assert lab.probe("tcp", 80, 1.5) == "timeout"
    assert first.ask("still").endswith(" still")  # the two admitted flows keep working
    second.process.kill()
    second.process.wait(10)
    assert lab.probe("tcp", 80, 5).startswith("b")


def test_udp_flows_past_the_limit_get_nothing(lab: L4Lab) -> None:
    listener = L4Listener(L4Protocol.UDP, 53, lab.members(), table_size=SIZE, connection_limit=2)
    L4Engine(RealNftOps(lab.lb)).apply(L4Service(LB_ID, VIP, (listener,)))
    # Each probe is a new socket, so a new flow; the earlier ones live in conntrack.
    assert lab.probe("udp", 53, 5).startswith("b")
    assert lab.probe("udp", 53, 5).startswith("b")
    assert lab.probe("udp", 53, 1) == "timeout"


def udp_timeouts(lab: L4Lab, port: int) -> list[int]:
    """The seconds left of each conntrack entry of UDP flows to ``VIP:port``."""
    out = run("ip", "netns", "exec", lab.lb, "conntrack", "-L", "-p", "udp", "--orig-dst", VIP,
              "--orig-port-dst", str(port))  # fmt: skip
    # "udp      17 28 src=10.201.0.2 dst=10.201.9.1 sport=... dport=53 ..."
    return [int(line.split()[2]) for line in out.splitlines() if line.startswith("udp")]


def test_a_udp_flow_is_forgotten_after_its_listeners_idle_timeout(lab: L4Lab) -> None:
    members = lab.members()
    timed = L4Listener(L4Protocol.UDP, 53, members, table_size=SIZE, idle_timeout=2)
    default = L4Listener(L4Protocol.UDP, 54, members, table_size=SIZE)
    L4Engine(RealNftOps(lab.lb)).apply(L4Service(LB_ID, VIP, (timed, default)))
    assert lab.probe("udp", 53, 5).startswith("b")
    assert lab.probe("udp", 54, 5).startswith("b")
    (left,) = udp_timeouts(lab, 53)
    (kernel,) = udp_timeouts(lab, 54)
    assert left <= 2 < 10 <= kernel
    time.sleep(3)
    assert udp_timeouts(lab, 53) == []
    assert len(udp_timeouts(lab, 54)) == 1
