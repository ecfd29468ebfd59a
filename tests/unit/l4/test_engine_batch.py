"""Many load balancers at once: one slot-update transaction, one counter listing (issue 34).

A node's health batch touches many load balancers and its status round reads all of them;
both used to cost one ``nft`` each. With a recording NftOps: what is loaded, how often.
"""

from __future__ import annotations

from dataclasses import replace

from lbaas.errors import LbaasError
from lbaas.l4 import nft
from lbaas.l4.engine import ApplyReport, L4Engine
from lbaas.l4.host.base import NftCommandFailed
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service
from tests.support.clock import FakeClock

LBS = [f"{n:08x}-5d51-4f57-8f55-0a1b2c3d4e5f" for n in range(1, 5)]


def members(lb: int) -> tuple[L4Member, ...]:
    return tuple(L4Member(f"m-{lb}-{n}", f"10.31.{lb}.{n}", 8080) for n in range(1, 4))


def service(lb: int, down: int | None = None, vip: str | None = None) -> L4Service:
    chosen = tuple(replace(m, healthy=False) if n == down else m for n, m in enumerate(members(lb)))
    listener = L4Listener(L4Protocol.TCP, 80, chosen, table_size=101)
    return L4Service(LBS[lb], vip or f"10.31.{lb}.100", (listener,))


class RefusesBatches(RecordingNftOps):
    """Refuses a transaction that updates slots of more than one map, as the kernel does
    when one of them changed behind the engine's back."""

    def load(self, ruleset: str) -> None:
        maps = {
            line.split()[4] for line in ruleset.splitlines() if line.startswith("delete element")
        }
        if len(maps) > 1:
            raise NftCommandFailed(["nft", "-f", "-"], 1, "No such file or directory")
        super().load(ruleset)


def applied(engine: L4Engine, ops: RecordingNftOps, count: int) -> None:
    for lb in range(count):
        engine.apply(service(lb))
    ops.loaded.clear()
    ops.checked.clear()


def test_slot_updates_of_several_load_balancers_are_one_transaction() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    applied(engine, ops, 3)
    outcomes = engine.apply_many([service(0, down=1), service(1, down=2), service(2)])
    assert len(ops.loaded) == 1 and not ops.checked
    for lb in (0, 1):
        assert f"ip lbaas {nft.map_name(LBS[lb], 'tcp_80')}" in ops.loaded[0]
    assert nft.lb_key(LBS[2]) not in ops.loaded[0]  # nothing moved there
    reports = [outcomes[LBS[lb]] for lb in range(3)]
    assert all(isinstance(r, ApplyReport) and not r.full_reload for r in reports)
    assert [r.moved_slots for r in reports if isinstance(r, ApplyReport)][2] == 0
    # remembered as applied: the same services again change nothing
    engine.apply_many([service(0, down=1), service(1, down=2)])
    assert len(ops.loaded) == 1


def test_a_refused_batch_is_applied_load_balancer_by_load_balancer() -> None:
    ops = RefusesBatches()
    engine = L4Engine(ops)
    applied(engine, ops, 2)
    outcomes = engine.apply_many([service(0, down=0), service(1, down=0)])
    assert len(ops.loaded) == 2  # each on its own once the batch was refused
    assert all(isinstance(o, ApplyReport) for o in outcomes.values())


def test_new_shapes_are_full_loads_together_beside_the_batch() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    applied(engine, ops, 2)
    outcomes = engine.apply_many([service(0, down=2), service(1, vip="10.31.9.9"), service(3)])
    first = outcomes[LBS[0]]
    assert isinstance(first, ApplyReport) and not first.full_reload
    for lb in (1, 3):  # a moved VIP, a load balancer never applied
        report = outcomes[LBS[lb]]
        assert isinstance(report, ApplyReport) and report.full_reload
    # the slot update, then both full loads checked and loaded together
    assert len(ops.checked) == 1 and len(ops.loaded) == 2
    assert nft.chain_name(LBS[3]) in ops.loaded[1] and nft.chain_name(LBS[1]) in ops.loaded[1]


class RefusesOneTable(RecordingNftOps):
    def __init__(self, table: str) -> None:
        super().__init__()
        self.table = table

    def check(self, ruleset: str) -> None:
        if self.table in ruleset:
            raise NftCommandFailed(["nft", "-c", "-f", "-"], 1, "refused")
        super().check(ruleset)

    def load(self, ruleset: str) -> None:  # what nft -c refuses, nft -f refuses too
        if self.table in ruleset:
            raise NftCommandFailed(["nft", "-f", "-"], 1, "refused")
        super().load(ruleset)


def test_one_load_balancer_failing_leaves_the_others_applied() -> None:
    ops = RefusesOneTable(nft.chain_name(LBS[1]))
    engine = L4Engine(ops)
    outcomes = engine.apply_many([service(0), service(1)])
    assert isinstance(outcomes[LBS[0]], ApplyReport)
    assert isinstance(outcomes[LBS[1]], LbaasError)


def test_every_load_balancers_counters_come_from_one_listing() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    first, second = (nft.chain_name(lb) for lb in LBS[:2])
    ops.set_flows(first, "10.31.0.100", {"tcp_80": 7})
    ops.set_flows(second, "10.31.1.100", {"tcp_80": 3, "udp_53": 2})
    counted = engine.new_flows_of(LBS[:3])
    assert ops.listings_read == [("map", "ip", "lbaas", "dispatch")]
    assert counted == {LBS[0]: {"tcp_80": 7}, LBS[1]: {"tcp_80": 3, "udp_53": 2}, LBS[2]: {}}


def test_single_reads_share_a_listing_younger_than_the_max_age() -> None:
    """Issue 34: every PUT and GET of a node answers with its load balancer's flows, and
    a listing of the dispatch map is O(load balancers); within flows_max_age one listing
    answers them all, and a round's listing (new_flows_of) is always fresh."""
    ops = RecordingNftOps()
    clock = FakeClock(100.0)
    engine = L4Engine(ops, flows_max_age=1.0, clock=clock)
    first, second = (nft.chain_name(lb) for lb in LBS[:2])
    ops.set_flows(first, "10.31.0.100", {"tcp_80": 7})
    assert engine.new_flows(LBS[0]) == {"tcp_80": 7}
    ops.set_flows(second, "10.31.1.100", {"tcp_80": 3})
    clock.advance(0.5)
    assert engine.new_flows(LBS[1]) == {}  # the listing of half a second ago
    assert len(ops.listings_read) == 1
    clock.advance(0.6)
    assert engine.new_flows(LBS[1]) == {"tcp_80": 3}  # older than a second: read again
    assert len(ops.listings_read) == 2
    ops.set_flows(first, "10.31.0.100", {"tcp_80": 9})
    assert engine.new_flows_of([LBS[0]]) == {LBS[0]: {"tcp_80": 9}}  # a round: fresh
    assert engine.new_flows(LBS[0]) == {"tcp_80": 9} and len(ops.listings_read) == 3


def test_without_a_max_age_every_read_lists_the_map() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    ops.set_flows(nft.chain_name(LBS[0]), "10.31.0.100", {"tcp_80": 1})
    assert engine.new_flows(LBS[0]) == {"tcp_80": 1}
    ops.set_flows(nft.chain_name(LBS[0]), "10.31.0.100", {"tcp_80": 2})
    assert engine.new_flows(LBS[0]) == {"tcp_80": 2}
    assert len(ops.listings_read) == 2
