"""A restarted engine keeps what the kernel holds as the specs say (issue 34, adoption).

With a recording NftOps whose rules, slot maps and ``dispatch`` listing the test sets as
an earlier engine left them: nothing is loaded again for a load balancer the kernel holds
exactly, only the differing slots for one whose map drifted, and the whole load balancer
for one whose chain, ``dispatch`` keys or old-layout table say otherwise.
"""

from __future__ import annotations

from dataclasses import replace

from lbaas.l4 import nft
from lbaas.l4.engine import ApplyReport, L4Engine
from lbaas.l4.host.base import NftCommandFailed
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service
from tests.support.held_nft import kernel_holding

LBS = [f"{n:08x}-7a11-4f57-8f55-0a1b2c3d4e5f" for n in range(1, 5)]


def service(lb: int, down: int | None = None, *, entry: bool = False) -> L4Service:
    members = tuple(
        L4Member(f"m-{lb}-{n}", f"10.41.{lb}.{n}", 8080, healthy=n != down) for n in range(1, 4)
    )
    listener = L4Listener(L4Protocol.TCP, 80, members, table_size=101)
    return L4Service(LBS[lb], f"10.41.{lb}.100", (listener,), entry=entry)


def loaded_after_base(ops: RecordingNftOps) -> list[str]:
    """What was loaded besides the shared part (written once, first)."""
    base = "\n".join(nft.render_base()) + "\n"
    assert ops.loaded[0] == base
    return ops.loaded[1:]


def test_a_kernel_holding_every_spec_is_kept_as_it_is() -> None:
    held = [service(0), service(1, entry=True)]
    ops = kernel_holding(*held)
    engine = L4Engine(ops)
    outcomes = engine.adopt_many(held)
    assert outcomes == {s.lb_id: ApplyReport(full_reload=False, moved_slots=0) for s in held}
    assert loaded_after_base(ops) == [] and ops.checked == []
    # Kept as applied: a member going down is a slot update of its slots alone.
    report = engine.apply(service(0, down=2))
    assert not report.full_reload and 0 < report.moved_slots < 101
    assert ops.loaded[-1].startswith(f"delete element ip lbaas {nft.map_name(LBS[0], 'tcp_80')}")


def test_slots_that_differ_are_rewritten_and_nothing_else() -> None:
    held = [service(0), service(1)]
    ops = kernel_holding(*held)
    slots = ops.slot_maps[nft.map_name(LBS[1], "tcp_80")]
    right = list(slots)
    slots[0] = None  # deleted behind the engine's back
    slots[1] = "10.99.99.99 . 9"  # another member
    slots.append("10.99.99.99 . 9")  # a slot past the table's size
    outcomes = L4Engine(ops).adopt_many(held)
    assert outcomes[LBS[0]] == ApplyReport(full_reload=False, moved_slots=0)
    assert outcomes[LBS[1]] == ApplyReport(full_reload=False, moved_slots=2)
    where = f"ip lbaas {nft.map_name(LBS[1], 'tcp_80')}"
    assert loaded_after_base(ops) == [
        f"delete element {where} {{ 1, 101 }}\n"
        f"add element {where} {{ 0 : {right[0]}, 1 : {right[1]} }}\n"
    ]
    assert ops.checked == []


def test_the_health_the_restarted_engine_starts_with_is_what_it_keeps() -> None:
    ops = kernel_holding(service(0, down=1))  # the earlier agent saw member 1 down
    outcomes = L4Engine(ops).adopt_many([service(0)])  # every member up until checked
    report = outcomes[LBS[0]]
    assert isinstance(report, ApplyReport) and not report.full_reload and report.moved_slots > 0
    (repair,) = loaded_after_base(ops)
    assert repair.startswith("delete element") and "10.41.0.1 . 8080" in repair


def test_a_chain_whose_rules_differ_is_loaded_whole() -> None:
    held = [service(0), service(1)]
    ops = kernel_holding(*held)
    assert ops.comments is not None
    ops.comments[nft.chain_name(LBS[1])] = ()  # flushed
    outcomes = L4Engine(ops).adopt_many(held)
    assert outcomes[LBS[1]] == ApplyReport(full_reload=True, moved_slots=101)
    (load,) = loaded_after_base(ops)
    assert f"add chain ip lbaas {nft.chain_name(LBS[1])}" in load
    assert nft.chain_name(LBS[0]) not in load


def test_a_rule_written_for_another_spec_is_loaded_whole() -> None:
    ops = kernel_holding(service(0))
    changed = replace(
        service(0),
        listeners=tuple(replace(li, connection_limit=5) for li in service(0).listeners),
    )
    outcomes = L4Engine(ops).adopt_many([changed])
    report = outcomes[LBS[0]]
    assert isinstance(report, ApplyReport) and report.full_reload
    assert "ct count over 5 drop" in loaded_after_base(ops)[0]


def test_dispatch_keys_or_an_entry_that_differ_mean_a_whole_load() -> None:
    old = replace(
        service(0),
        listeners=(*service(0).listeners, replace(service(0).listeners[0], port=81)),
    )
    ops = kernel_holding(old, service(1))
    # The kernel has a listener more than the spec (left by a change never applied), and
    # load balancer 1 is the entry now.
    outcomes = L4Engine(ops).adopt_many([service(0), service(1, entry=True)])
    assert all(isinstance(o, ApplyReport) and o.full_reload for o in outcomes.values())
    (load,) = loaded_after_base(ops)
    assert "delete element ip lbaas dispatch { 10.41.0.100 . tcp . 81 }" in load
    assert "add element ip lbaas entry_vips { 10.41.1.100 }" in load


def test_a_missing_map_or_a_table_of_the_old_layout_means_a_whole_load() -> None:
    held = [service(0), service(1)]
    ops = kernel_holding(*held)
    del ops.slot_maps[nft.map_name(LBS[0], "tcp_80")]
    ops.listings[("tables",)] = {
        "nftables": [{"table": {"family": "ip", "name": nft.LEGACY_PREFIX + nft.lb_key(LBS[1])}}]
    }
    outcomes = L4Engine(ops).adopt_many(held)
    assert all(isinstance(o, ApplyReport) and o.full_reload for o in outcomes.values())
    (load,) = loaded_after_base(ops)
    assert f"delete table ip {nft.LEGACY_PREFIX}{nft.lb_key(LBS[1])}" in load


def test_an_empty_kernel_gets_declarations_then_elements() -> None:
    ops = RecordingNftOps()
    ops.comments = {}  # a node after a reboot
    outcomes = L4Engine(ops).adopt_many([service(0), service(1, entry=True)])
    assert outcomes == {LBS[n]: ApplyReport(full_reload=True, moved_slots=101) for n in (0, 1)}
    declared, filled = loaded_after_base(ops)
    assert ops.checked == []
    for n in (0, 1):
        # The chain and an empty map first, nothing reaching them ...
        assert f"add chain ip lbaas {nft.chain_name(LBS[n])} {{" in declared
        empty = f"add map ip lbaas {nft.map_name(LBS[n], 'tcp_80')} {{ typeof numgen inc mod 101"
        assert f"{empty} : ip daddr . th dport; }}" in declared
        # ... then the slots, and the dispatch element that makes it reachable.
        assert f"add element ip lbaas {nft.map_name(LBS[n], 'tcp_80')} {{ 0 : " in filled
    assert "dispatch" not in declared and "entry_vips" not in declared
    jump = f"10.41.0.100 . tcp . 80 : jump {nft.chain_name(LBS[0])}"
    assert f"add element ip lbaas dispatch {{ {jump} }}" in filled
    assert filled.endswith("add element ip lbaas entry_vips { 10.41.1.100 }\n")


class RefusesElements(RecordingNftOps):
    def load(self, ruleset: str) -> None:
        if ruleset.startswith("add element"):
            raise NftCommandFailed(["nft", "-f", "-"], 1, "File exists")
        super().load(ruleset)


def test_absent_load_balancers_refused_together_are_loaded_whole() -> None:
    ops = RefusesElements()
    ops.comments = {}
    outcomes = L4Engine(ops).adopt_many([service(0), service(1)])
    assert all(isinstance(o, ApplyReport) and o.full_reload for o in outcomes.values())
    declared, whole = loaded_after_base(ops)
    assert "dispatch" not in declared
    assert nft.chain_name(LBS[0]) in whole and nft.chain_name(LBS[1]) in whole
    assert "add element ip lbaas dispatch" in whole


def test_an_ops_that_cannot_read_rules_loads_everything_as_before() -> None:
    ops = RecordingNftOps()  # comments None
    outcomes = L4Engine(ops).adopt_many([service(0), service(1)])
    assert all(isinstance(o, ApplyReport) and o.full_reload for o in outcomes.values())
    assert len(ops.loaded) == 1 and nft.render_base()[0] in ops.loaded[0]
