"""The L4 engine for real: nftables in a namespace between a client and TCP/UDP backends.

Needs root. Each test builds its own namespaces (see l4_lab.py) and removes them, with the
backend and client processes, even when it fails.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from l4_lab import VIP, L4Lab, built_lab, namespace_exists, run

from lbaas.l4 import nft
from lbaas.l4.engine import L4Engine, slot_values_of
from lbaas.l4.host.real import RealNftOps
from lbaas.l4.service import (
    HashKey,
    L4Listener,
    L4Member,
    L4Protocol,
    L4Service,
    LiveFlowPolicy,
)

pytestmark = [pytest.mark.root, pytest.mark.slow]
LB_ID = "7d3c0e52-9a41-4c55-8a0e-2b6f4d1c9e77"
SIZE = 251
FLOWS = 45


@pytest.fixture
def lab() -> Iterator[L4Lab]:
    with built_lab() as built:
        yield built


def service(
    members: tuple[L4Member, ...],
    key: HashKey = HashKey.FIVE_TUPLE,
    live_flows: LiveFlowPolicy = LiveFlowPolicy.KEEP,
) -> L4Service:
    return L4Service(
        LB_ID,
        VIP,
        (
            L4Listener(L4Protocol.TCP, 80, members, key, SIZE, live_flows=live_flows),
            L4Listener(L4Protocol.UDP, 53, members, key, SIZE, live_flows=live_flows),
        ),
    )


def kernel_slots(lab: L4Lab, listener: str) -> list[str]:
    """The slot map as the kernel holds it, in ``address . port`` form by slot."""
    out = run("ip", "netns", "exec", lab.lb, "nft", "-j", "list", "map", "ip",
              nft.TABLE, nft.map_name(LB_ID, listener))  # fmt: skip
    found = next(item["map"] for item in json.loads(out)["nftables"] if "map" in item)
    slots = {key: " . ".join(map(str, value["concat"])) for key, value in found["elem"]}
    return [slots[slot] for slot in range(len(slots))]


def test_tcp_and_udp_flows_spread_over_every_member(lab: L4Lab) -> None:
    members = lab.members()
    engine = L4Engine(RealNftOps(lab.lb))
    assert engine.apply(service(members)).full_reload
    assert set(lab.names("tcp", 80, FLOWS)) == {"b1", "b2", "b3"}
    assert set(lab.names("udp", 53, FLOWS)) == {"b1", "b2", "b3"}
    # every flow was balanced here, and counted once (NAT rules see first packets only)
    assert engine.new_flows(LB_ID) == {"tcp_80": FLOWS, "udp_53": FLOWS}
    # the same counters from one terse listing of every table (a node's status round)
    counted = engine.new_flows_of([LB_ID, "not-applied"])
    assert counted == {LB_ID: {"tcp_80": FLOWS, "udp_53": FLOWS}, "not-applied": {}}
    assert kernel_slots(lab, "tcp_80") == slot_values_of(service(members).listeners[0])


def test_a_removed_member_gets_no_new_flows_and_keeps_its_established_one(lab: L4Lab) -> None:
    members = lab.members()
    engine = L4Engine(RealNftOps(lab.lb))
    engine.apply(service(members))
    held = lab.hold(80)
    gone = held.greeting()
    rest = tuple(member for member in members if member.key != gone)

    report = engine.apply(service(rest))

    assert not report.full_reload and 0 < report.moved_slots < SIZE
    assert kernel_slots(lab, "tcp_80") == slot_values_of(service(rest).listeners[0])
    assert gone not in lab.names("tcp", 80, FLOWS)
    assert gone not in lab.names("udp", 53, FLOWS)
    assert held.ask("still there?") == f"{gone} still there?"
    # and once it is back it gets new flows again
    engine.apply(service(members))
    assert gone in lab.names("tcp", 80, FLOWS)


def test_cut_ends_the_established_flows_of_a_removed_member(lab: L4Lab) -> None:
    members = lab.members()
    engine = L4Engine(RealNftOps(lab.lb))
    engine.apply(service(members, live_flows=LiveFlowPolicy.CUT))
    held = lab.hold(80)
    gone = held.greeting()
    assert held.ask("before") == f"{gone} before"

    rest = tuple(m for m in members if m.key != gone)
    report = engine.apply(service(rest, live_flows=LiveFlowPolicy.CUT))

    assert report.cut_flows >= 1
    assert held.ask("after").startswith("ERROR")


def test_source_ip_persistence_sends_one_client_to_one_member(lab: L4Lab) -> None:
    L4Engine(RealNftOps(lab.lb)).apply(service(lab.members(), HashKey.SOURCE_ADDRESS))
    assert len(set(lab.names("tcp", 80, FLOWS))) == 1
    assert len(set(lab.names("udp", 53, FLOWS))) == 1


def test_an_sctp_listener_loads_into_the_kernel(lab: L4Lab) -> None:
    # This kernel has no SCTP sockets (socket() gives EPROTONOSUPPORT), so no SCTP traffic
    # can be sent; what can be shown is that nftables takes the SCTP rule and map.
    sctp = L4Service(LB_ID, VIP, (L4Listener(L4Protocol.SCTP, 9000, lab.members(), table_size=7),))
    L4Engine(RealNftOps(lab.lb)).apply(sctp)
    listed = RealNftOps(lab.lb).list_table(nft.TABLE)
    assert listed is not None and "sctp dport 9000" in listed
    assert f"{VIP} . sctp . 9000 counter packets 0 bytes 0 : jump {nft.chain_name(LB_ID)}" in listed


def test_removing_the_load_balancer_deletes_its_chain_maps_and_dispatch(lab: L4Lab) -> None:
    engine = L4Engine(RealNftOps(lab.lb))
    engine.apply(service(lab.members()))
    engine.remove(LB_ID)
    listed = RealNftOps(lab.lb).list_table(nft.TABLE) or ""
    assert nft.lb_key(LB_ID) not in listed and VIP not in listed, listed
    engine.remove(LB_ID)  # idempotent
    L4Engine(RealNftOps(lab.lb)).remove(LB_ID)  # and so for an engine that never loaded it


def test_the_lab_leaves_nothing_behind() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    lab = L4Lab(backends=1)
    try:
        lab.build()
        names = list(lab.namespaces)
        pids = [process.pid for process in lab.processes]
    finally:
        lab.close()
    assert not any(namespace_exists(name) for name in names)
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)


def test_a_table_deleted_behind_the_engines_back_is_loaded_again(lab: L4Lab) -> None:
    members = lab.members()
    engine = L4Engine(RealNftOps(lab.lb))
    engine.apply(service(members))
    run("ip", "netns", "exec", lab.lb, "nft", "delete", "table", "ip", nft.TABLE)

    report = engine.apply(service(members[1:]))

    assert report.full_reload
    assert kernel_slots(lab, "tcp_80") == slot_values_of(service(members[1:]).listeners[0])
    assert set(lab.names("tcp", 80, FLOWS)) == {"b2", "b3"}
