"""Maglev places and tombstones of one listener: what keeps a member's removal small (pure).

Rebuilding a Maglev table without a removed member moves its own slots and, through the
fill's cascade, some 5.7/N more (N = 1000, M = 65537; docs/architecture.md). So the control
plane keeps a removed member's *place* (the key its permutation comes from) in the spec as
a tombstone: every node builds the table with it, as with a member that is down, and only
its slots move. A member added later takes a tombstone of the same weight and tier, and
with it that permutation, so a replacement moves only those slots back. The spec carries
places and tombstones, so every node computes the same table from the same spec; a
controller that does not remember the last placement reads it back from a node
(``recovered``).

Tombstones are forgotten (the table then becomes the plain one of the live members, and
the cascade deferred by them is paid at once) when the table grows (every slot may move
then anyway), when the listener has no live member left, and when there are more than
``max_tombstones(live)``: the removed members' slots land on the others unevenly, a
little more with each tombstone (docs/architecture.md has the figures). A pool that
shrinks keeps its table size until then: a smaller table would move every slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lbaas.wire.l4 import L4ListenerSpec, L4MemberSpec, L4ServiceStatus, L4TombstoneSpec

#: At most this share of a listener's live members may be tombstones (and at least
#: ``MIN_TOMBSTONES``); past it all of them are forgotten in one compaction.
TOMBSTONE_SHARE = 0.1
MIN_TOMBSTONES = 4


def max_tombstones(live: int) -> int:
    return max(MIN_TOMBSTONES, int(live * TOMBSTONE_SHARE))


@dataclass(frozen=True)
class Placement:
    """One listener's places (member id -> place, where not its id) and tombstones."""

    table_size: int
    places: dict[str, str] = field(default_factory=dict)
    tombstones: tuple[L4TombstoneSpec, ...] = ()
    # What each member had when last placed (id -> (place, weight, backup)).
    members: dict[str, tuple[str, int, bool]] = field(default_factory=dict)


def place(previous: Placement | None, listener: L4ListenerSpec) -> Placement:
    """The placement of ``listener``'s members given the previous one (None: none kept).

    A function of its inputs only: the same previous placement and members give the same
    result, so re-sending a spec (a node catching up) never moves a slot.
    """
    members = [m for m in listener.members if m.weight > 0]
    size = listener.table_size
    if previous is None or size > previous.table_size or not members:
        return _fresh(size, members)
    taken: dict[str, tuple[str, int, bool]] = {}
    graves = list(previous.tombstones)
    for member in members:
        kept = previous.members.get(member.id)
        if kept is not None:
            taken[member.id] = (kept[0], member.weight, member.backup)
    gone = [(mid, kept) for mid, kept in previous.members.items() if mid not in taken]
    graves.extend(L4TombstoneSpec(place=k[0], weight=k[1], backup=k[2]) for _, k in gone)
    for member in members:
        if member.id in taken:
            continue
        grave = _grave_for(graves, member)
        if grave is not None:
            graves.remove(grave)
            taken[member.id] = (grave.place, member.weight, member.backup)
        else:
            used = {p for p, _, _ in taken.values()} | {g.place for g in graves}
            taken[member.id] = (_free_place(member.id, used), member.weight, member.backup)
    if len(graves) > max_tombstones(len(members)):
        if size != previous.table_size:
            return _fresh(size, members)  # every slot moves anyway: start afresh
        graves = []
    return Placement(
        table_size=previous.table_size,
        places={mid: p for mid, (p, _, _) in taken.items() if p != mid},
        tombstones=tuple(graves),
        members=taken,
    )


def _fresh(size: int, members: Sequence[L4MemberSpec]) -> Placement:
    return Placement(size, members={m.id: (m.id, m.weight, m.backup) for m in members})


def _grave_for(graves: list[L4TombstoneSpec], member: L4MemberSpec) -> L4TombstoneSpec | None:
    """The tombstone a new member takes: its own old place if it comes back, else the
    oldest of the same weight and tier (None: it takes a place of its own)."""
    own = [g for g in graves if g.place == member.id]
    if own:
        return own[0]
    same = [g for g in graves if g.weight == member.weight and g.backup == member.backup]
    return same[0] if same else None


def _free_place(member_id: str, used: set[str]) -> str:
    """The member's id, or (its id held by another: it left and came back after its place
    was reused) the first of ``id~1``, ``id~2``, … that no one holds."""
    candidate, n = member_id, 0
    while candidate in used:
        n += 1
        candidate = f"{member_id}~{n}"
    return candidate


def apply_placement(listener: L4ListenerSpec, placement: Placement) -> L4ListenerSpec:
    """``listener`` with its members' places and its tombstones set from ``placement``."""
    members = tuple(
        m.model_copy(update={"place": placement.places.get(m.id) if m.weight > 0 else None})
        for m in listener.members
    )
    return listener.model_copy(
        update={
            "members": members,
            "tombstones": placement.tombstones,
            "table_size": placement.table_size,
        }
    )


def recovered(listener: L4ListenerSpec, seen: L4ServiceStatus) -> Placement | None:
    """The placement a node applied for ``listener`` (``seen`` asked with placement): a
    controller's start when it does not remember the last one (None: the node has none)."""
    applied = (seen.placement or {}).get(listener.id)
    if applied is None:
        return None
    members = {m.id: (m.place, m.weight, m.backup) for m in applied.members}
    return Placement(
        table_size=applied.table_size,
        places={mid: p for mid, (p, _, _) in members.items() if p != mid},
        tombstones=applied.tombstones,
        members=members,
    )
