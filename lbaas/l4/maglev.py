"""Weighted Maglev lookup tables (Eisenbud et al., NSDI 2016; weights as Katran does them).

Each backend walks its own permutation of the M slots (M prime), ``offset + j * skip mod M``,
and backends take turns claiming the next free slot of their permutation until every slot is
taken. Weights change how often a backend gets a turn: in round r a backend of weight w
takes a turn when ``floor(r * w / max_weight)`` grows, so over the table its share of turns,
and so of slots, is ``w / sum(weights)``.

Determinism across nodes: offsets and skips come from BLAKE2b of the backend's key (never
Python's salted ``hash()``), and backends take turns in the order of their keys, so the same
backends give the same table on every node whatever order they were listed in.

Speed: two fills build the same table as the textbook loop (``tests/unit/l4`` compares
them). From ``NUMPY_FROM_BACKENDS`` backends on, the fill goes a round at a time with numpy
(``maglev_fill``). Below, rounds are too small for that to pay, and the loop runs turn by
turn in Python: the slow part there is probing past taken slots late in the fill, so the
free/taken state is a ``bytearray`` and a backend probes one stride of its permutation at
a time with a C-level ``find`` on an extended slice (``taken[c::step]``), stepping
backwards when the skip is above M/2 so that strides are long; a walk whose step exceeds
M/8 visits only a few slots per slice, so it probes one slot at a time.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lbaas.errors import InvalidInput

if TYPE_CHECKING:
    from lbaas.l4.maglev_fill import Ints

# Rounds of fewer backends cost more in numpy calls than the whole fill in Python: below
# this many backends the table is filled turn by turn (same table; docs/architecture.md).
NUMPY_FROM_BACKENDS = 500

# Largest weight Octavia accepts for a member; weight 0 means "no new connections".
MAX_WEIGHT = 256


@dataclass(frozen=True, order=True)
class Backend:
    """One destination in a table: a stable key (member id, or address:port) and a weight."""

    key: str
    weight: int = 1


@dataclass(frozen=True)
class MaglevTable:
    """A filled lookup table: ``slots[i]`` is the index in ``backends`` owning slot i."""

    size: int
    backends: tuple[Backend, ...]
    slots: tuple[int, ...]

    def owner(self, slot: int) -> str:
        """The key of the backend that owns ``slot``."""
        return self.backends[self.slots[slot]].key

    def shares(self) -> dict[str, int]:
        """How many slots each backend owns."""
        counts = [0] * len(self.backends)
        for index in self.slots:
            counts[index] += 1
        return {backend.key: count for backend, count in zip(self.backends, counts, strict=True)}


def is_prime(number: int) -> bool:
    if number < 2:
        return False
    if number % 2 == 0:
        return number == 2
    divisor = 3
    while divisor * divisor <= number:
        if number % divisor == 0:
            return False
        divisor += 2
    return True


def permutation(key: str, size: int) -> tuple[int, int]:
    """The (offset, skip) of ``key``'s permutation of ``size`` slots; same on every node."""
    digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
    offset = int.from_bytes(digest[:8], "big") % size
    skip = int.from_bytes(digest[8:], "big") % (size - 1) + 1
    return offset, skip


def check_table_request(backends: Sequence[Backend], size: int) -> None:
    """Refuse tables the algorithm cannot build, with a 400-style message."""
    if not is_prime(size):
        raise InvalidInput(f"Maglev table size {size} is not a prime number.")
    keys = [backend.key for backend in backends]
    if len(set(keys)) != len(keys):
        raise InvalidInput("Maglev backends must have distinct keys.")
    if len(backends) > size:
        raise InvalidInput(f"{len(backends)} backends do not fit a table of {size} slots.")
    for backend in backends:
        if not 1 <= backend.weight <= MAX_WEIGHT:
            raise InvalidInput(
                f"Maglev backend weight must be 1..{MAX_WEIGHT}, got {backend.weight}."
            )


def turn_rounds(weights: Sequence[int], size: int) -> list[list[int]]:
    """The first ``size`` turns, round by round: backend indexes in index order inside one.

    A backend of weight w takes its k-th turn in round ``ceil(k * max / w)`` (Katran's
    cumulative weights), so equal weights give plain round robin.
    """
    heaviest = max(weights)
    if min(weights) == heaviest:
        full, rest = divmod(size, len(weights))
        everyone = list(range(len(weights)))
        return [everyone] * full + ([everyone[:rest]] if rest else [])
    total = sum(weights)
    # Enough rounds for at least ``size`` turns: each backend gets floor(r * w / max).
    last_round = -(-size * heaviest // total) + len(weights)
    by_round: list[list[int]] = [[] for _ in range(last_round + 1)]
    for index, weight in enumerate(weights):
        turns = last_round * weight // heaviest
        for turn in range(1, turns + 1):
            by_round[-(-turn * heaviest // weight)].append(index)
    rounds, left = [], size
    for members in by_round:
        if members and left > 0:
            rounds.append(members[:left])
            left -= len(rounds[-1])
    return rounds


def turn_order(weights: Sequence[int], size: int) -> list[int]:
    """The first ``size`` turns in order (``turn_rounds`` one after another)."""
    return [index for members in turn_rounds(weights, size) for index in members]


def build_table(backends: Iterable[Backend], size: int) -> MaglevTable:
    """Fill a Maglev table of ``size`` slots (prime) with ``backends`` (weights 1..256).

    An empty backend list gives an empty table (no slots to fill). Raises InvalidInput for a
    size that is not prime, duplicate keys, more backends than slots, or a bad weight.
    """
    # The order Backend's own comparison gives, without a generated __lt__ call per pair.
    return _build_sorted(tuple(sorted(backends, key=_sort_key)), size)


def _sort_key(backend: Backend) -> tuple[str, int]:
    return backend.key, backend.weight


# Tables are immutable, and the same pool comes back often (every health change rebuilds
# from the pool's table; a member coming back returns to it), so recent ones are kept.
@functools.lru_cache(maxsize=16)
def _build_sorted(ordered: tuple[Backend, ...], size: int) -> MaglevTable:
    if not ordered:
        return MaglevTable(size=size, backends=(), slots=())
    check_table_request(ordered, size)
    slots = _populate(ordered, size)
    return MaglevTable(size=size, backends=ordered, slots=tuple(slots))


def clear_table_cache() -> None:
    """Forget the recent tables (benchmarks time the build itself)."""
    _build_sorted.cache_clear()


def build_table_with_down(
    backends: Iterable[Backend], size: int, down: Collection[str]
) -> MaglevTable:
    """A table of ``backends`` in which the ones whose key is in ``down`` own no slot.

    The table of all backends stays the base; each slot of a down backend goes to the
    owner of that slot in a table of the others. A backend going down therefore moves
    exactly its own slots, and coming back up moves them back: rebuilding without it would
    move several times more (Maglev's refill cascades), and health changes are the
    frequent ones. The result depends only on the backends and the down set, so it is the
    same on every node that sees the same health.
    """
    everyone = build_table(backends, size)
    if not any(backend.key in down for backend in everyone.backends):
        return everyone
    fallback = build_table((b for b in everyone.backends if b.key not in down), size)
    if not fallback.slots:
        return fallback
    index_of = {backend.key: index for index, backend in enumerate(fallback.backends)}
    remap = [index_of.get(backend.key, -1) for backend in everyone.backends]
    slots = tuple(
        remap[owner] if remap[owner] >= 0 else substitute
        for owner, substitute in zip(everyone.slots, fallback.slots, strict=True)
    )
    return MaglevTable(size=size, backends=fallback.backends, slots=slots)


def _populate(backends: Sequence[Backend], size: int) -> list[int]:
    if len(backends) < NUMPY_FROM_BACKENDS:
        return _populate_in_python(backends, size)
    slots: list[int] = _populate_with_numpy(backends, size).tolist()
    return slots


def _populate_with_numpy(backends: Sequence[Backend], size: int) -> Ints:
    # numpy only here (tables of 500+ backends): importing it costs the agent ~1 s of
    # start-up under load, and a restarted agent must answer its controller quickly.
    import numpy as np

    from lbaas.l4.maglev_fill import populate

    rounds = turn_rounds([backend.weight for backend in backends], size)
    # Equal weights repeat one list for every round: convert it once.
    arrays: dict[int, Ints] = {}
    for members in rounds:
        if id(members) not in arrays:
            arrays[id(members)] = np.array(members, dtype=np.int64)
    return populate(
        [permutation(backend.key, size) for backend in backends],
        [arrays[id(members)] for members in rounds],
        size,
    )


def _populate_in_python(backends: Sequence[Backend], size: int) -> list[int]:
    params = [permutation(backend.key, size) for backend in backends]
    position = [offset for offset, _ in params]
    # Walk backwards when that makes the stride longer: same permutation, fewer slices.
    step = [skip if skip <= size // 2 else skip - size for _, skip in params]
    taken = bytearray(size)
    slots = [0] * size
    # Each turn takes one slot, so exactly ``size`` turns fill the table.
    for index in turn_order([backend.weight for backend in backends], size):
        slot = position[index]
        if taken[slot]:
            slot = _first_free(taken, slot, step[index], size)
        taken[slot] = 1
        slots[slot] = index
        position[index] = (slot + step[index]) % size
    return slots


def _first_free(taken: bytearray, slot: int, stride: int, size: int) -> int:
    """The first free slot of the walk ``slot, slot+stride, …`` (mod size); one exists."""
    if stride > size // 8 or stride < -size // 8:
        # Slices of a long stride hold a handful of slots: probing one by one is cheaper.
        step = stride if stride > 0 else stride + size
        while taken[slot]:
            slot += step
            if slot >= size:
                slot -= size
        return slot
    while True:
        found = taken[slot::stride].find(0)
        if found >= 0:
            return slot + found * stride
        # Past the end of this stride: continue where the walk wraps round.
        if stride > 0:
            slot += -(-(size - slot) // stride) * stride - size
        else:
            slot += (slot // -stride + 1) * stride + size


def moved_slots(old: MaglevTable, new: MaglevTable) -> list[int]:
    """Slots whose owner (by key) differs between two tables of the same size."""
    if old.size != new.size:
        raise ValueError("tables of different sizes have no slot-by-slot difference")
    if not old.slots or not new.slots:
        return list(range(new.size)) if old.slots or new.slots else []
    old_keys = [backend.key for backend in old.backends]
    new_keys = [backend.key for backend in new.backends]
    return [
        slot
        for slot, (a, b) in enumerate(zip(old.slots, new.slots, strict=True))
        if old_keys[a] != new_keys[b]
    ]
