"""A restarted engine adopts the table an earlier one left (``L4Engine.adopt_many``).

Real nftables in namespaces this module creates and deletes, even when a test fails
(issue 34, docs/architecture.md, "The L4 engine"): one engine programs four load
balancers (allowed networks, a connection limit, a UDP timeout, an entry VIP) and goes
away, its tables left in the kernel; three of them are then changed behind its back (a
slot's element deleted, a slot given another member, a chain flushed), and one member was
down for the first engine. A new engine adopting them loads nothing for the untouched
one, rewrites only the differing slots of the drifted maps (netlink steps, no text), and
loads the flushed one whole; the table is then the one a fresh engine's full loads leave
in another namespace. Needs root.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from lbaas.l4 import nft
from lbaas.l4.engine import ApplyReport, L4Engine
from lbaas.l4.host.lib_ops import LibNftOps
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service
from tests.support.recorded_nft import RecordedLibNftOps

pytestmark = [pytest.mark.root]


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    """The restarted engine's namespace and the reference's."""
    names = tuple(f"lbt-ado-{uuid.uuid4().hex[:8]}" for _ in range(2))
    try:
        for name in names:
            subprocess.run(["ip", "netns", "add", name], check=True, timeout=30)
        yield names[0], names[1]
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "delete", name], check=False, timeout=30)


def balancer(index: int, down: int | None = None) -> L4Service:
    members = tuple(
        L4Member(f"m{index}-{k}", f"10.213.{index}.{k}", 8080 + k, healthy=k != down)
        for k in (1, 2, 3)
    )
    tcp = L4Listener(
        L4Protocol.TCP,
        80,
        members,
        table_size=251,
        allowed_cidrs=("10.50.0.0/16",),
        connection_limit=9,
    )
    udp = L4Listener(L4Protocol.UDP, 53, members, table_size=251, idle_timeout=7)
    lb_id = str(uuid.UUID(int=(index + 7) << 100))
    return L4Service(lb_id, f"10.211.0.{index + 1}", (tcp, udp), entry=index % 2 == 0)


def nft_in(namespace: str, text: str) -> None:
    subprocess.run(
        ["ip", "netns", "exec", namespace, "nft", "-f", "-"],
        input=text,
        text=True,
        check=True,
        timeout=30,
    )


def test_a_restarted_engine_keeps_what_is_right_and_fixes_what_drifted(
    namespaces: tuple[str, str],
) -> None:
    node, reference = namespaces
    first = LibNftOps(node)
    try:
        L4Engine(first).apply_many([balancer(0), balancer(1, down=2), balancer(2), balancer(3)])
    finally:
        first.close()
    tcp = {n: f"ip {nft.TABLE} {nft.map_name(balancer(n).lb_id, 'tcp_80')}" for n in range(4)}
    nft_in(
        node,
        f"delete element {tcp[2]} {{ 0 }}\n"
        f"delete element {tcp[3]} {{ 5 }}\nadd element {tcp[3]} {{ 5 : 10.9.9.9 . 9 }}\n"
        f"flush chain ip {nft.TABLE} {nft.chain_name(balancer(0).lb_id)}\n",
    )
    wanted = [balancer(n) for n in range(4)]  # every member up, as a new agent starts
    ops = RecordedLibNftOps(node)
    try:
        outcomes = L4Engine(ops).adopt_many(wanted)
        table = ops.list_table(nft.TABLE)
    finally:
        ops.close()
    assert outcomes[balancer(0).lb_id] == ApplyReport(full_reload=True, moved_slots=2 * 251)
    for n in (1, 2, 3):  # 1: its member 2 was down for the first engine
        report = outcomes[balancer(n).lb_id]
        assert isinstance(report, ApplyReport) and not report.full_reload, (n, report)
    assert outcomes[balancer(2).lb_id] == ApplyReport(full_reload=False, moved_slots=1)
    assert outcomes[balancer(3).lb_id] == ApplyReport(full_reload=False, moved_slots=1)
    # Texts: the shared part, then balancer 0 whole; the slots went as netlink steps.
    assert len(ops.loaded) == 2
    assert nft.chain_name(balancer(0).lb_id) in ops.loaded[1]
    assert all(nft.lb_key(balancer(n).lb_id) not in ops.loaded[1] for n in (1, 2, 3))
    fresh = LibNftOps(reference)
    try:
        for service in wanted:
            L4Engine(fresh).apply(replace(service))
        # The same objects, rules and elements; listed in another order (creation's).
        assert sorted((table or "").splitlines()) == sorted(
            (fresh.list_table(nft.TABLE) or "").splitlines()
        )
    finally:
        fresh.close()


def test_adopting_an_untouched_table_loads_no_load_balancer(namespaces: tuple[str, str]) -> None:
    node, _reference = namespaces
    first = LibNftOps(node)
    try:
        L4Engine(first).apply_many([balancer(n) for n in range(4)])
        before = first.list_table(nft.TABLE)
    finally:
        first.close()
    ops = RecordedLibNftOps(node)
    try:
        engine = L4Engine(ops)
        outcomes = engine.adopt_many([balancer(n) for n in range(4)])
        assert set(outcomes.values()) == {ApplyReport(full_reload=False, moved_slots=0)}
        assert len(ops.loaded) == 1  # the shared part
        assert ops.list_table(nft.TABLE) == before
        # Adopted as applied: a member down is a slot update, sent as steps.
        assert not engine.apply(balancer(1, down=1)).full_reload
        assert len(ops.loaded) == 1
    finally:
        ops.close()


def test_an_empty_namespace_gets_what_full_loads_give(namespaces: tuple[str, str]) -> None:
    """A node after a reboot: declarations as text, then slots, ``dispatch`` (with its
    counters) and ``entry_vips`` as one netlink batch; the table is a full load's."""
    node, reference = namespaces
    wanted = [balancer(n, down=2 if n == 1 else None) for n in range(4)]
    ops = RecordedLibNftOps(node)
    fresh = LibNftOps(reference)
    try:
        outcomes = L4Engine(ops).adopt_many(wanted)
        assert all(isinstance(o, ApplyReport) and o.full_reload for o in outcomes.values())
        assert len(ops.loaded) == 2  # the shared part, the declarations: elements as steps
        assert "add element" not in ops.loaded[1]
        for service in wanted:
            L4Engine(fresh).apply(service)
        table = ops.list_table(nft.TABLE)
        assert table is not None and "counter packets 0 bytes 0 : jump" in table
        assert table == fresh.list_table(nft.TABLE)
    finally:
        ops.close()
        fresh.close()
