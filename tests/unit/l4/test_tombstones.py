"""Removal with tombstones: every node's table from the spec alone, moving only the
removed member's slots (``lbaas.providers.distributed.places`` and the engine's table)."""

from __future__ import annotations

from lbaas.l4.maglev import MaglevTable, build_table, moved_slots
from lbaas.l4node.manager import l4_service
from lbaas.providers.distributed.places import (
    Placement,
    apply_placement,
    max_tombstones,
    place,
)
from lbaas.wire.l4 import L4ListenerSpec, L4MemberSpec, L4ServiceSpec


def members(ids: range | list[int], weight: int = 1) -> tuple[L4MemberSpec, ...]:
    return tuple(
        L4MemberSpec(id=f"m{i:04d}", address=f"10.{i // 250}.{i % 250}.1", port=80, weight=weight)
        for i in ids
    )


def listener(ms: tuple[L4MemberSpec, ...], size: int) -> L4ListenerSpec:
    return L4ListenerSpec(
        id="l1", protocol="tcp", port=80, hash_key="five_tuple", table_size=size, members=ms
    )


def converge(
    previous: Placement | None, ms: tuple[L4MemberSpec, ...], size: int
) -> tuple[Placement, MaglevTable, L4ListenerSpec]:
    """What a controller sends and what any node then builds from it alone."""
    raw = listener(ms, size)
    placement = place(previous, raw)
    sent = apply_placement(raw, placement)
    # A node sees only the spec (JSON round trip as on the wire).
    spec = L4ServiceSpec.model_validate_json(
        L4ServiceSpec(
            version=1, loadbalancer_id="lb", vip="10.99.0.1", listeners=(sent,)
        ).model_dump_json()
    )
    (engine_listener,) = l4_service(spec, {}).listeners
    return placement, engine_listener.table(), sent


def owner_keys(table: MaglevTable, spec: L4ListenerSpec) -> list[str]:
    """Each slot's member id (the table names places; the spec maps places to members)."""
    member_of = {m.place_key: m.id for m in spec.members}
    return [member_of[table.backends[i].key] for i in table.slots]


def test_removing_one_of_1000_moves_only_its_slots_and_a_replacement_only_those_back() -> None:
    size = 65537
    first, before, sent0 = converge(None, members(range(1000)), size)
    owners0 = owner_keys(before, sent0)
    gone = "m0421"
    second, after, sent1 = converge(first, members([i for i in range(1000) if i != 421]), size)
    assert [t.place for t in second.tombstones] == [gone]
    owners1 = owner_keys(after, sent1)
    moved = [s for s in range(size) if owners0[s] != owners1[s]]
    own = [s for s in range(size) if owners0[s] == gone]
    assert moved == own and gone not in owners1  # exactly its slots: nothing beyond
    # Plain Maglev (rebuild without it) moves several times more: the cascade avoided.
    plain = build_table([b for b in before.backends if b.key != gone], size)
    assert len(moved_slots(before, plain)) > 3 * len(own)
    # A new member takes the tombstone's place: it gets exactly those slots.
    third, again, sent2 = converge(second, (*members([i for i in range(1000) if i != 421]),
                                            *members([5000])), size)  # fmt: skip
    assert third.tombstones == () and third.places == {"m5000": gone}
    owners2 = owner_keys(again, sent2)
    assert [s for s in range(size) if owners2[s] != owners1[s]] == own
    assert all(owners2[s] == "m5000" for s in own)


def test_shares_stay_near_even_with_tombstones_at_their_limit() -> None:
    size, n = 16411, 100
    placement, _, _ = converge(None, members(range(n)), size)
    kept = list(range(max_tombstones(n - max_tombstones(n)), n))
    placement, table, sent = converge(placement, members(kept), size)
    assert 0 < len(placement.tombstones) <= max_tombstones(len(kept))
    counts = table.shares()
    fair = size / len(kept)
    assert len(counts) == len(kept) and sum(counts.values()) == size
    # The dead's slots land like a sample, not evenly: within 10 % of a fair share here.
    assert max(abs(c - fair) for c in counts.values()) < 0.1 * fair, counts


def test_tombstones_are_forgotten_past_the_limit_on_a_new_size_and_with_no_member() -> None:
    size = 4099
    start, _, _ = converge(None, members(range(20)), size)
    limit = max_tombstones(16)
    some, _, _ = converge(start, members(range(limit, 20)), size)
    assert len(some.tombstones) == limit
    fewer, _, _ = converge(some, members(range(limit + 1, 20)), size)
    assert fewer.tombstones == ()  # one more than allowed: all forgotten (compaction)
    assert converge(some, members(range(limit, 20)), 16411)[0].tombstones == ()
    assert converge(some, (), size)[0].tombstones == ()


def test_a_shrinking_pool_keeps_its_table_size_until_its_tombstones_are_forgotten() -> None:
    start, _, _ = converge(None, members(range(12)), 4099)
    # The pool asks for a smaller table (1021) but a smaller table would move every slot.
    kept, table, sent = converge(start, members(range(2, 12)), 1021)
    assert (kept.table_size, table.size, sent.table_size) == (4099, 4099, 4099)
    assert len(kept.tombstones) == 2
    compacted, table, sent = converge(kept, members(range(7, 12)), 1021)
    assert (compacted.table_size, table.size, compacted.tombstones) == (1021, 1021, ())
    assert compacted.places == {}


def test_places_follow_weight_and_a_member_back_takes_its_own_place() -> None:
    size = 1021
    start, _, _ = converge(None, (*members([1]), *members([2], weight=3)), size)
    both_gone, _, _ = converge(start, (), size)
    assert both_gone.tombstones == ()  # no live member: nothing to keep
    one_gone, _, _ = converge(start, members([1]), size)
    assert [(t.place, t.weight) for t in one_gone.tombstones] == [("m0002", 3)]
    # A weight-1 newcomer does not take a weight-3 place; the member itself, back, does.
    other, _, _ = converge(one_gone, members([1, 7]), size)
    assert other.places == {} and len(other.tombstones) == 1
    back, _, sent = converge(one_gone, (*members([1]), *members([2], weight=3)), size)
    assert back.tombstones == () and back.places == {}
    assert [m.place for m in sent.members] == [None, None]


def test_a_member_back_after_its_place_was_reused_gets_a_fresh_place() -> None:
    size = 1021
    start, _, _ = converge(None, members([1, 2]), size)
    removed, _, _ = converge(start, members([2]), size)
    reused, _, _ = converge(removed, members([2, 3]), size)
    assert reused.places == {"m0003": "m0001"}
    returned, table, sent = converge(reused, members([1, 2, 3]), size)
    assert returned.places == {"m0003": "m0001", "m0001": "m0001~1"}
    assert set(owner_keys(table, sent)) == {"m0001", "m0002", "m0003"}


def test_the_same_spec_again_changes_nothing() -> None:
    size = 4099
    start, _, _ = converge(None, members(range(30)), size)
    once, table1, _ = converge(start, members(range(1, 30)), size)
    twice, table2, _ = converge(once, members(range(1, 30)), size)
    assert once == twice and table1 == table2
