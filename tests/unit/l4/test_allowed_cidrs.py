"""allowed_cidrs in the L4 engine: one interval set per listener, checked before balancing.

The set's changes travel in the same transaction as slot updates (never a full reload, so
the table is never replaced under established flows), and what the engine writes is
accepted by the real ``nft -c``, after a full load of the same table.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lbaas.l4 import nft
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service

from .nft_cases import CASES, render
from .test_nft_render import nft_check

LB = "0b6c51c8-5d51-4f57-8f55-0a1b2c3d4e5f"
MEMBERS = tuple(L4Member(f"member-{n}", f"10.30.0.{n}", 8080) for n in range(1, 4))


def service(cidrs: tuple[str, ...], members: tuple[L4Member, ...] = MEMBERS) -> L4Service:
    listener = L4Listener(L4Protocol.TCP, 80, members, table_size=101, allowed_cidrs=cidrs)
    return L4Service(LB, "10.30.1.1", (listener,))


def test_overlapping_networks_merge_and_ipv6_ones_stay_out_of_the_ipv4_set() -> None:
    listener = service(("10.1.2.0/24", "10.1.0.0/16", "10.2.0.0/24", "10.2.1.0/24", "::/0"))
    assert listener.listeners[0].allowed_ipv4() == ("10.1.0.0/16", "10.2.0.0/23")


def test_no_allowed_cidrs_renders_no_set_and_no_filter() -> None:
    text = render(service(()))
    assert "a_0b6c51c85d51_tcp_80" not in text and " drop" not in text


def test_the_filter_comes_before_the_balancing_rule() -> None:
    text = render(service(("10.1.0.0/16",)))
    drop = text.index("ip saddr != @a_0b6c51c85d51_tcp_80 drop")
    assert drop < text.index("dnat ip to jhash")
    assert "add set ip lbaas a_0b6c51c85d51_tcp_80 { type ipv4_addr; flags interval;" in text


def test_a_change_of_networks_is_an_element_update_with_the_slot_update() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(("10.1.0.0/16", "10.3.0.0/16")))
    report = engine.apply(service(("10.1.0.0/16", "10.4.0.0/16"), MEMBERS[1:]))
    assert not report.full_reload and report.moved_slots > 0
    update = ops.loaded[-1]
    assert update.splitlines()[:2] == [
        "delete element ip lbaas a_0b6c51c85d51_tcp_80 { 10.3.0.0/16 }",
        "add element ip lbaas a_0b6c51c85d51_tcp_80 { 10.4.0.0/16 }",
    ]
    assert "delete element ip lbaas m_0b6c51c85d51_tcp_80 {" in update  # one transaction


@pytest.mark.parametrize(
    ("before", "after"), [((), ("10.1.0.0/16",)), (("10.1.0.0/16",), ())], ids=["on", "off"]
)
def test_turning_the_filter_on_or_off_reloads_the_table(
    before: tuple[str, ...], after: tuple[str, ...]
) -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(before))
    assert engine.apply(service(after)).full_reload
    assert ("@a_0b6c51c85d51_tcp_80" in ops.loaded[-1]) == bool(after)


def test_an_unchanged_set_writes_nothing() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(("10.1.0.0/16",)))
    engine.apply(service(("10.1.0.0/16",)))
    assert len(ops.loaded) == 1


@pytest.mark.root
def test_nft_accepts_an_element_update_after_a_full_load() -> None:
    base = CASES["allowed_cidrs_ipv4_ipv6"]
    old = base.listeners[0]
    new = replace(old, allowed_cidrs=("10.1.0.0/16", "198.51.100.0/24", "2001:db8::/32"))
    update = nft.render_allow_update(base.lb_id, old, new)
    assert update.count("element") == 2
    done = nft_check(render(base) + update)
    assert done.returncode == 0, done.stderr
