"""The Maglev fill, a round at a time with numpy: the same table as the turn-by-turn loop.

The textbook loop gives one backend a turn at a time; each claims the next slot of its
permutation that is still free. Inside one round every backend takes at most one turn, in
index order, so a round is a serial dictatorship: the backend earlier in the round gets a
contested slot, the later one walks on. That is the one stable matching of the round's
backends to the slots free at its start when every slot prefers the earlier backend, and
deferred acceptance finds it in any proposal order: each backend proposes its next free
slot, a slot keeps the earliest backend that proposed, the others walk on. So a round is
done with a few whole-array steps (all backends walk and propose at once) and, once few
are still unplaced, a short Python loop over them.

The last round has as many free slots as turns left, so its final claims walk far; for
its final ``LAST_PART`` turns each backend's choice is the free slot with the smallest
index in its permutation, ``(slot - offset) / skip mod M``, computed for all at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Walk = npt.NDArray[np.signedinteger[Any]]  # int32 where that cannot overflow

# Below this many unplaced backends a round finishes in Python: fewer numpy calls.
FEW = 48
# How many of the last turns compare every backend with every free slot.
LAST_PART = 192
# ``holder[slot]``: the place in the round of the backend holding the slot so far, or this.
NOBODY = 1 << 40


def populate(params: Sequence[tuple[int, int]], rounds: Sequence[Ints], size: int) -> Ints:
    """The owner of every slot, backends given by (offset, skip) and turns by rounds."""
    offset = np.array([p[0] for p in params], dtype=np.int64)
    skip = np.array([p[1] for p in params], dtype=np.int64)
    walked = np.zeros(len(params), dtype=np.int64)  # permutation steps taken so far
    taken_bytes = bytearray(size)  # the Python loop reads it, numpy reads and writes it
    taken = np.frombuffer(taken_bytes, dtype=np.bool_)
    slots = np.empty(size, dtype=np.int64)
    holder = np.full(size, NOBODY, dtype=np.int64)
    free = size
    for members in _split_last(rounds, size):
        count = len(members)
        if count == free:
            _last_round(members, offset[members], skip[members], taken, slots, size)
            break
        claimed, position = _round(
            _Round(walked[members], offset[members], skip[members], count),
            taken,
            taken_bytes,
            holder,
            free,
        )
        taken[claimed] = True
        slots[claimed] = members
        holder[claimed] = NOBODY
        walked[members] = position + 1
        free -= count
    return slots


def _split_last(rounds: Sequence[Ints], size: int) -> list[Ints]:
    """The rounds, the last split so that only its final LAST_PART turns compare all pairs.

    A round split in two keeps its order (the first part claims before the second), so the
    table is the same; the first part still has LAST_PART spare slots, so it walks little.
    """
    last = rounds[-1] if rounds else None
    if last is None or len(last) <= LAST_PART:
        return list(rounds)
    return [*rounds[:-1], last[:-LAST_PART], last[-LAST_PART:]]


class _Round:
    """The backends of one round, by their place in it: where each stands, and its walk."""

    def __init__(self, position: Ints, offset: Ints, skip: Ints, count: int) -> None:
        self.position = position
        self.offset = offset
        self.skip = skip
        self.claimed = np.empty(count, dtype=np.int64)


def _round(
    turn: _Round, taken: npt.NDArray[np.bool_], taken_bytes: bytearray, holder: Ints, free: int
) -> tuple[Ints, Ints]:
    """Deferred acceptance among one round's backends; ``holder`` is scratch, left clean."""
    size = len(taken)
    window = min(max(3 * size // (2 * free), 1), 1024)  # 1.5 x the expected walk
    active = np.arange(len(turn.claimed), dtype=np.int64)
    # Late rounds walk far, and a walk in Python costs a step per slot: finish fewer there.
    few = FEW if size < 8 * free else FEW // 4
    while active.size > few:
        proposed = _walk(turn, active, taken, window)
        before = holder.take(proposed)
        np.minimum.at(holder, proposed, active)
        after = holder.take(proposed)
        won = after == active
        turn.claimed[active[won]] = proposed[won]
        displaced = np.unique(before[(before != NOBODY) & (after != before)])
        active = np.concatenate((active[~won], displaced))
        turn.position[active] += 1
    _finish_in_python(turn, active.tolist(), taken_bytes, holder)
    return turn.claimed, turn.position


def _walk(turn: _Round, active: Ints, taken: npt.NDArray[np.bool_], window: int) -> Ints:
    """Move each active backend to the first free slot from where it stands; those slots."""
    size = len(taken)
    stride = turn.skip[active]
    found = (turn.offset[active] + turn.position[active] * stride) % size
    busy = taken.take(found)
    if not busy.any():
        return found
    todo = np.flatnonzero(busy)
    # int32 halves the memory traffic where no sum can overflow it.
    kind = np.int32 if size * (4 * window + 1) < 2**31 else np.int64
    steps: Walk = np.arange(1, window + 1, dtype=kind)
    base: Walk = found[todo].astype(kind)
    stride = stride[todo].astype(kind)
    moved = np.zeros(todo.size, dtype=np.int64)
    while True:
        ahead = steps * stride[:, None]
        ahead += base[:, None]
        ahead %= size
        busy_ahead = taken.take(ahead)  # take(): about twice as fast as indexing
        first = busy_ahead.argmin(axis=1)
        rows = np.arange(todo.size)
        hit = ~busy_ahead[rows, first]
        done = todo[hit]
        found[done] = ahead[rows[hit], first[hit]]
        turn.position[active[done]] += moved[hit] + first[hit] + 1
        if hit.all():
            return found
        todo, base = todo[~hit], ahead[~hit, -1]
        stride, moved = stride[~hit], moved[~hit] + len(steps)
        # The few left look four times as far at once: fewer whole-array steps.
        steps = np.arange(1, 4 * window + 1, dtype=kind)


def _finish_in_python(turn: _Round, queue: list[int], taken_bytes: bytearray, holder: Ints) -> None:
    """Deferred acceptance for the few backends left unplaced, one proposal at a time."""
    size = len(taken_bytes)
    while queue:
        place = queue.pop()
        step = int(turn.position[place])
        stride = int(turn.skip[place])
        slot = (int(turn.offset[place]) + step * stride) % size
        while True:
            if not taken_bytes[slot]:
                rival = int(holder[slot])
                if rival > place:  # free, or held by a later backend of the round
                    break
            step += 1
            slot += stride
            if slot >= size:
                slot -= size
        holder[slot] = place
        turn.claimed[place] = slot
        turn.position[place] = step
        if rival != NOBODY:
            turn.position[rival] += 1
            queue.append(rival)


def _last_round(
    members: Ints,
    offset: Ints,
    skip: Ints,
    taken: npt.NDArray[np.bool_],
    slots: Ints,
    size: int,
) -> None:
    """Fill the last free slots: each backend in turn takes the one it reaches first."""
    free_slots = np.flatnonzero(~taken)
    inverse = np.array([pow(int(s), -1, size) for s in skip], dtype=np.int64)
    gap = free_slots[None, :] - offset[:, None]
    gap[gap < 0] += size
    # Where each free slot comes in each backend's permutation; every earlier one is taken.
    reached = gap * inverse[:, None] % size
    for place, member in enumerate(members.tolist()):
        column = int(reached[place].argmin())
        slots[free_slots[column]] = member
        reached[:, column] = size
