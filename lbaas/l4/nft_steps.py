"""A slot update or a removal as data: the element and object changes its text makes.

Why (issue 34, docs/architecture.md, "The L4 engine"): every ``nft`` command that adds or
deletes an element, or deletes an object, makes nftables 1.0.6 read every chain and set
definition of the namespace first (~50 ms at 10,000 load balancers). A slot update and the
removal of a load balancer the engine loaded itself touch only objects whose names and
types the engine knows, so an ``NftOps`` can send these steps to the kernel as they are
(``NftOps.load_steps``); the text stays what is sent when it cannot, or when the kernel
refuses them.

Each step names one object of ``table ip lbaas``; in the order given, as one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from lbaas.l4 import nft


class Verb(StrEnum):
    DELETE_SLOTS = "delete slots"  # of a slot map: ``keys`` are slot numbers
    ADD_SLOTS = "add slots"  # ``slots``: (slot, address, port)
    DELETE_DISPATCH = "delete dispatch"  # ``keys``: ``VIP . tcp . 80``
    DELETE_ENTRY = "delete entry"  # ``keys``: VIPs of ``entry_vips``
    ADD_DISPATCH = "add dispatch"  # ``keys``: ``VIP . tcp . 80``, each to ``jump <chain>``
    ADD_ENTRY = "add entry"  # ``keys``: VIPs
    FLUSH_CHAIN = "flush chain"
    DELETE_CHAIN = "delete chain"
    DELETE_SET = "delete set"  # a map or a set
    DELETE_CT_TIMEOUT = "delete ct timeout"


@dataclass(frozen=True)
class Step:
    verb: Verb
    name: str
    keys: tuple[str, ...] = ()
    slots: tuple[tuple[int, str, int], ...] = ()
    chain: str = ""  # ADD_DISPATCH: the chain its elements jump to


def slot_update(
    lb_id: str,
    listener_name: str,
    changes: Iterable[tuple[int, str]],
    deleted: Iterable[int] | None = None,
) -> list[Step]:
    """``nft.render_slot_update`` as steps: the slots' old elements deleted (``deleted``:
    those that hold one; None: every changed slot), new ones added."""
    pairs = sorted(changes)
    gone = sorted(slot for slot, _ in pairs) if deleted is None else sorted(deleted)
    name = nft.map_name(lb_id, listener_name)
    slots = []
    for slot, value in pairs:
        address, port = value.split(" . ")
        slots.append((slot, address, int(port)))
    steps = [Step(Verb.DELETE_SLOTS, name, keys=tuple(map(str, gone)))] if gone else []
    return steps + ([Step(Verb.ADD_SLOTS, name, slots=tuple(slots))] if slots else [])


def delete(lb_id: str, before: nft.Footprint) -> list[Step]:
    """``nft.render_delete`` (without a legacy table) as steps, for a load balancer that
    holds exactly ``before``: the kernel refuses them if any object is missing."""
    chain = nft.chain_name(lb_id)
    steps = []
    if before.dispatch:
        steps.append(Step(Verb.DELETE_DISPATCH, "dispatch", keys=tuple(sorted(before.dispatch))))
    if before.entry_vips:
        steps.append(Step(Verb.DELETE_ENTRY, "entry_vips", keys=tuple(sorted(before.entry_vips))))
    steps.append(Step(Verb.FLUSH_CHAIN, chain))  # its rules refer to the maps and sets
    for kind, name in sorted(before.objects):
        verb = Verb.DELETE_CT_TIMEOUT if kind == "ct timeout" else Verb.DELETE_SET
        steps.append(Step(verb, name))
    steps.append(Step(Verb.DELETE_CHAIN, chain))
    return steps
