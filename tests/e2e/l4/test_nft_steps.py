"""Slot updates and removals sent as netlink steps (``LibNftOps.load_steps``), not as text.

Real nftables in namespaces this module creates and deletes, even when a test fails
(issue 34, docs/architecture.md, "The L4 engine"): an engine whose slot updates and
removals go to the kernel as element and object messages leaves the table a text-only
engine (``RealNftOps``, ``nft -f``) leaves, for load balancers with allowed networks, a
connection limit, a UDP timeout and an entry VIP, and for a 16411-slot map moved whole
(several messages in one batch); when the kernel refuses the steps (the
table was changed behind the engine's back) nothing of them is applied, and the text path
(then the checked full load) still gets the table right. Traffic goes where the updated
map says. Needs root.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest
from l4_lab import VIP, L4Lab, built_lab

from lbaas.l4 import nft
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service
from tests.support.recorded_nft import RecordedLibNftOps

pytestmark = [pytest.mark.root]


def _netns(*argv: str) -> None:
    subprocess.run(["ip", "netns", *argv], check=True, capture_output=True, timeout=30)


@pytest.fixture
def pair() -> Iterator[tuple[RecordedLibNftOps, RealNftOps, str]]:
    """Steps in one namespace, text in the other; the first namespace's name."""
    names = [f"lbt-stp-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    ops: RecordedLibNftOps | None = None
    try:
        for name in names:
            _netns("add", name)
        ops = RecordedLibNftOps(names[0])
        yield ops, RealNftOps(names[1]), names[0]
    finally:
        if ops is not None:
            ops.close()
        for name in names:
            subprocess.run(["ip", "netns", "delete", name], check=False, timeout=30)


def members(index: int) -> tuple[L4Member, ...]:
    return tuple(L4Member(f"m{index}-{k}", f"10.212.{index}.{k}", 8080 + k) for k in (1, 2, 3))


def balancer(index: int, down: int = 0) -> L4Service:
    """Two listeners (TCP with allowed networks and a limit, UDP with a timeout), an entry
    VIP; ``down`` members marked unhealthy."""
    held = tuple(replace(m, healthy=k >= down) for k, m in enumerate(members(index)))
    tcp = L4Listener(L4Protocol.TCP, 80, held, table_size=251, allowed_cidrs=("10.50.0.0/16",),
                     connection_limit=9)  # fmt: skip
    udp = L4Listener(L4Protocol.UDP, 53, held, table_size=251, idle_timeout=7)
    lb_id = str(uuid.UUID(int=(index + 1) << 100))
    return L4Service(lb_id, f"10.210.0.{index + 1}", (tcp, udp), entry=True)


def test_slot_updates_and_removals_as_steps_leave_the_table_text_leaves(
    pair: tuple[RecordedLibNftOps, RealNftOps, str],
) -> None:
    steps, text = pair[0], pair[1]
    by_steps, by_text = L4Engine(steps), L4Engine(text)
    for engine in (by_steps, by_text):
        engine.apply_many([balancer(0), balancer(1), balancer(2)])
    loads = len(steps.loaded)
    for down in (1, 2, 0):
        for engine in (by_steps, by_text):
            assert not engine.apply(balancer(1, down)).full_reload
            engine.apply_many([balancer(0, down), balancer(2, down)])
        assert steps.list_table(nft.TABLE) == text.list_table(nft.TABLE)
    for engine in (by_steps, by_text):
        engine.remove(balancer(1).lb_id)
    assert steps.list_table(nft.TABLE) == text.list_table(nft.TABLE)
    assert len(steps.loaded) == loads  # every update and the removal went as steps
    assert f"lb_{nft.lb_key(balancer(1).lb_id)}" not in (steps.list_table(nft.TABLE) or "")
    assert "10.210.0.2" not in (steps.list_table(nft.TABLE) or "")


def test_refused_steps_change_nothing_and_the_text_path_still_applies(
    pair: tuple[RecordedLibNftOps, RealNftOps, str],
) -> None:
    steps, _text, namespace = pair
    engine = L4Engine(steps)
    engine.apply_many([balancer(0), balancer(1)])
    udp_map = f"ip {nft.TABLE} {nft.map_name(balancer(0).lb_id, 'udp_53')}"
    subprocess.run(["ip", "netns", "exec", namespace, "nft", "flush", "map", *udp_map.split()],
                   check=True, timeout=30)  # fmt: skip
    # The UDP map's elements are gone: deleting its slots is refused, the TCP map's
    # change in the same batch with it; the text is refused too, then a full load.
    report = engine.apply(balancer(0, down=1))
    assert report.full_reload
    tcp_map = ("map", "ip", nft.TABLE, nft.map_name(balancer(0).lb_id, "tcp_80"))
    listing = steps.list_json(tcp_map)
    assert listing is not None
    targets = {str(value["concat"][0]) for _slot, value in listing["nftables"][1]["map"]["elem"]}
    assert targets == {"10.212.0.2", "10.212.0.3"}
    # A removal whose chain was emptied and UDP map deleted behind the engine's back:
    # steps refused (no such map), the text (which declares what it deletes) removes it.
    chain = nft.chain_name(balancer(1).lb_id)
    gone = nft.map_name(balancer(1).lb_id, "udp_53")
    sabotage = f"flush chain ip {nft.TABLE} {chain}\ndelete map ip {nft.TABLE} {gone}\n"
    subprocess.run(["ip", "netns", "exec", namespace, "nft", "-f", "-"], check=True, timeout=30,
                   text=True, input=sabotage)  # fmt: skip
    loads = len(steps.loaded)
    engine.remove(balancer(1).lb_id)
    assert len(steps.loaded) == loads + 1
    table = steps.list_table(nft.TABLE) or ""
    assert chain not in table and nft.lb_key(balancer(1).lb_id) not in table
    assert nft.chain_name(balancer(0).lb_id) in table


def test_a_whole_large_map_moved_goes_as_one_batch(
    pair: tuple[RecordedLibNftOps, RealNftOps, str],
) -> None:
    steps, text = pair[0], pair[1]

    def service(base: int) -> L4Service:
        held = tuple(L4Member(f"m{base + k}", f"10.213.{base}.{k}", 80) for k in (1, 2))
        listener = L4Listener(L4Protocol.TCP, 80, held, table_size=16411)
        return L4Service(str(uuid.UUID(int=55 << 100)), "10.210.1.1", (listener,))

    by_steps, by_text = L4Engine(steps), L4Engine(text)
    for engine in (by_steps, by_text):
        engine.apply(service(0))
    loads = len(steps.loaded)
    for engine in (by_steps, by_text):  # every one of the 16411 slots moves
        assert engine.apply(service(1)).moved_slots == 16411
    assert len(steps.loaded) == loads
    assert steps.list_table(nft.TABLE) == text.list_table(nft.TABLE)


@pytest.fixture
def lab() -> Iterator[L4Lab]:
    with built_lab() as built:
        yield built


def test_traffic_follows_a_slot_update_sent_as_steps(lab: L4Lab) -> None:
    ops = RecordedLibNftOps(lab.lb)
    try:
        engine = L4Engine(ops)
        on_lab = lab.members()

        def service(healthy: int) -> L4Service:
            held = tuple(replace(m, healthy=k == healthy) for k, m in enumerate(on_lab))
            listener = L4Listener(L4Protocol.TCP, 80, held, table_size=251)
            return L4Service(str(uuid.UUID(int=77 << 100)), VIP, (listener,))

        engine.apply(service(0))
        assert set(lab.names("tcp", 80, 6)) == {on_lab[0].key}
        loads = len(ops.loaded)
        assert not engine.apply(service(1)).full_reload
        assert len(ops.loaded) == loads
        assert set(lab.names("tcp", 80, 6)) == {on_lab[1].key}
    finally:
        ops.close()
