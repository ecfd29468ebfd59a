"""The Maglev table: full, balanced by weight, little disruption, the same everywhere."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from lbaas.errors import InvalidInput
from lbaas.l4.maglev import (
    Backend,
    build_table,
    build_table_with_down,
    moved_slots,
    permutation,
    turn_order,
    turn_rounds,
)
from lbaas.l4.maglev_fill import populate


def reference_table(backends: list[Backend], size: int) -> tuple[int, ...]:
    """The population loop as the Maglev paper writes it, with Katran's weight counters."""
    ordered = sorted(backends)
    params = [permutation(backend.key, size) for backend in ordered]
    heaviest = max(backend.weight for backend in ordered)
    taken_turns = [0] * len(ordered)
    credit = [0] * len(ordered)
    table = [-1] * size
    filled = 0
    while True:
        for index, backend in enumerate(ordered):
            credit[index] += backend.weight
            if credit[index] < heaviest:
                continue
            credit[index] -= heaviest
            offset, skip = params[index]
            slot = (offset + taken_turns[index] * skip) % size
            while table[slot] >= 0:
                taken_turns[index] += 1
                slot = (offset + taken_turns[index] * skip) % size
            table[slot] = index
            taken_turns[index] += 1
            filled += 1
            if filled == size:
                return tuple(table)


def numpy_fill(members: list[Backend], size: int) -> tuple[int, ...]:
    """The numpy fill alone, whatever the pool's size (build_table picks one by size)."""
    rounds = turn_rounds([member.weight for member in members], size)
    slots = populate(
        [permutation(member.key, size) for member in members],
        [np.array(members_of_round, dtype=np.int64) for members_of_round in rounds],
        size,
    )
    return tuple(slots.tolist())


def backends(count: int, weights: list[int] | None = None) -> list[Backend]:
    return [
        Backend(f"member-{index}", weights[index % len(weights)] if weights else 1)
        for index in range(count)
    ]


# (table size, members, their weights in turn): pools the Python fill builds.
SMALL_POOLS: list[tuple[int, int, list[int] | None]] = [
    (7, 3, None),
    (13, 13, None),
    (251, 10, [1, 3]),
    (4099, 40, [1, 2, 5, 256]),
]


@pytest.mark.parametrize(
    ("size", "count", "weights"),
    [
        *SMALL_POOLS,
        (65537, 7, None),
        # From NUMPY_FROM_BACKENDS on, the numpy fill: whole-array proposals, the Python
        # finish, and the last round by permutation index.
        (16411, 600, [1, 2, 3]),
        (65537, 1000, None),
        # A wide last round: most of it proposes like the others, its end compares all pairs.
        (5003, 2600, None),
    ],
)
def test_the_fast_fill_builds_the_papers_table(
    size: int, count: int, weights: list[int] | None
) -> None:
    members = backends(count, weights)
    assert build_table(members, size).slots == reference_table(members, size)


@pytest.mark.parametrize(
    ("size", "count", "weights"),
    [*SMALL_POOLS, (16411, 100, None)],
)
def test_the_numpy_fill_builds_the_papers_table_for_small_pools_too(
    size: int, count: int, weights: list[int] | None
) -> None:
    # Small pools use the Python fill in build_table; the numpy one must agree there too.
    members = sorted(backends(count, weights))
    assert numpy_fill(members, size) == reference_table(members, size)


@pytest.mark.parametrize("seed", range(6))
def test_the_numpy_fill_matches_the_paper_on_random_pools(seed: int) -> None:
    chance = random.Random(seed)
    size = chance.choice([101, 503, 1009, 2003])
    count = chance.randint(1, min(size, 400))
    members = sorted(
        Backend(f"m{chance.getrandbits(32):08x}-{index}", chance.choice([1, 1, 2, 7, 256]))
        for index in range(count)
    )
    assert numpy_fill(members, size) == reference_table(members, size), (size, count)


def test_every_slot_is_filled_and_every_backend_owns_some() -> None:
    table = build_table(backends(50), 5003)
    assert len(table.slots) == 5003
    assert all(0 <= index < 50 for index in table.slots)
    assert set(table.shares()) == {f"member-{index}" for index in range(50)}
    assert min(table.shares().values()) > 0


@pytest.mark.parametrize("weights", [None, [1, 2, 3, 4], [100, 200, 256]])
def test_each_share_is_within_one_percent_of_its_weight_share(weights: list[int] | None) -> None:
    members = backends(20, weights)
    size = 65537 if weights else 2003  # over 100 slots per member of the lightest weight
    shares = build_table(members, size).shares()
    total_weight = sum(member.weight for member in members)
    for member in members:
        expected = size * member.weight / total_weight
        assert abs(shares[member.key] - expected) <= 0.01 * expected, member


def test_removing_a_member_moves_its_slots_and_few_others() -> None:
    members = backends(50)
    before = build_table(members, 5003)
    for removed in (members[0], members[25], members[49]):
        after = build_table([member for member in members if member != removed], 5003)
        moved = moved_slots(before, after)
        owned = {slot for slot in range(5003) if before.owner(slot) == removed.key}
        assert owned <= set(moved)
        assert len(set(moved) - owned) <= 0.03 * 5003
        assert removed.key not in after.shares()


def test_adding_a_member_takes_slots_only_for_itself_and_few_others() -> None:
    members = backends(30)
    before = build_table(members, 4099)
    after = build_table([*members, Backend("newcomer")], 4099)
    moved = set(moved_slots(before, after))
    gained = {slot for slot in range(4099) if after.owner(slot) == "newcomer"}
    assert gained <= moved
    assert len(moved - gained) <= 0.03 * 4099


def test_the_table_ignores_input_order() -> None:
    members = backends(40, [1, 2])
    shuffled = members[:]
    random.Random(7).shuffle(shuffled)
    assert build_table(members, 4099) == build_table(shuffled, 4099)


def test_the_table_is_the_same_in_another_process_with_another_hash_seed() -> None:
    code = (
        "import json; from lbaas.l4.maglev import Backend, build_table;"
        "t = build_table([Backend(f'member-{i}', 1 + i % 3) for i in range(25)], 1009);"
        "print(json.dumps([t.owner(s) for s in range(t.size)]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    here = build_table([Backend(f"member-{i}", 1 + i % 3) for i in range(25)], 1009)
    assert json.loads(other.stdout) == [here.owner(slot) for slot in range(here.size)]


def test_a_pinned_table_stays_the_same_across_versions() -> None:
    # Nodes running different lbaas versions must agree: changing the hash breaks this.
    table = build_table([Backend("a"), Backend("b"), Backend("c", 2)], 13)
    assert "".join(table.owner(slot) for slot in range(13)) == PINNED


PINNED = "bcacacccccbba"


def test_weighted_turns_follow_the_weights() -> None:
    turns = list(itertools.islice(turn_order([1, 2, 4], 700), 700))
    assert [turns.count(index) for index in range(3)] == [100, 200, 400]


def test_an_empty_pool_gives_an_empty_table() -> None:
    assert build_table([], 13).slots == ()


@pytest.mark.parametrize(
    ("members", "size", "message"),
    [
        ([Backend("a")], 12, "not a prime"),
        ([Backend("a"), Backend("a")], 13, "distinct keys"),
        ([Backend(str(index)) for index in range(8)], 7, "do not fit"),
        ([Backend("a", 0)], 13, "weight must be 1..256"),
        ([Backend("a", 257)], 13, "weight must be 1..256"),
    ],
)
def test_tables_it_cannot_build_are_refused(
    members: list[Backend], size: int, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        build_table(members, size)


def test_a_member_going_down_moves_exactly_its_slots_and_back() -> None:
    members = backends(20)
    base = build_table(members, 65537)
    down = build_table_with_down(members, 65537, {"member-7"})
    owned = [slot for slot in range(65537) if base.owner(slot) == "member-7"]
    assert moved_slots(base, down) == owned
    assert "member-7" not in down.shares()
    # Its slots land on the others like a random sample, so the shares stay close but not
    # exact (docs/architecture.md has the figures).
    for key, share in down.shares().items():
        assert abs(share - 65537 / 19) <= 0.01 * 65537 / 19, key
    assert build_table_with_down(members, 65537, set()) == base


def test_with_every_member_down_the_table_is_empty() -> None:
    members = backends(3)
    assert build_table_with_down(members, 13, {"member-0", "member-1", "member-2"}).slots == ()
