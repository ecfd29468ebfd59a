"""Adoption: what a restarted engine keeps of the table an earlier one programmed.

Why (issue 34, docs/architecture.md, "The L4 engine"): the kernel's table outlives the
agent, so an agent that restarts on a node holding thousands of load balancers finds them
programmed already. Loading each again through libnftables (its parser and evaluation of
every slot, 1,021 or more per listener) took minutes and hundreds of megabytes at 1,000;
comparing costs a few netlink dumps: per load balancer, a restarted engine keeps what the
kernel holds when

- its ``dispatch`` keys are exactly the spec's, pointing at its chain, and its VIP is in
  ``entry_vips`` exactly when it is the entry node (one listing of each);
- its chain's rules carry the comments a full load of the spec writes now
  (``nft.rule_comments``: a digest of the rules and of the definitions of the maps, sets
  and timeouts they use), in order, and no other rule (one dump of the table's rules);
- it has no table of the layout before the shared one;

and rewrites just the slots whose element differs from the spec's table (one dump of each
slot map; the health the new engine starts with: every member up until its checks say
otherwise). Anything else is loaded whole, as before. What the digest cannot tell: a set
of allowed networks or a timeout whose contents were changed behind the agent's back
(their definitions cannot be replaced while a rule uses them, their elements can).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lbaas.l4 import nft, nft_steps
from lbaas.l4.host.base import NftOps
from lbaas.l4.maglev import MaglevTable
from lbaas.l4.service import L4Service


@dataclass(frozen=True)
class Held:
    """What the kernel's table holds, read once for a restore."""

    footprints: dict[str, nft.Footprint]  # by lb_key, from dispatch and entry_vips
    comments: Mapping[str, tuple[str, ...]]  # each chain's rules' comments, in order
    legacy: frozenset[str]  # lb_keys that still have a table of the old layout


@dataclass(frozen=True)
class SlotRepair:
    """One listener's slots to change: those holding another element (``deleted``) go,
    the desired elements of every differing slot (``added``) come."""

    listener: str
    deleted: tuple[int, ...]
    added: tuple[tuple[int, str], ...]


def read_held(ops: NftOps) -> Held | None:
    """What the table holds; None when ``ops`` cannot read rules (then nothing is kept)."""
    comments = ops.rule_comments()
    if comments is None:
        return None
    dispatch = ops.list_json(("map", "ip", nft.TABLE, "dispatch")) or {}
    entry = ops.list_json(("set", "ip", nft.TABLE, "entry_vips")) or {}
    names = ops.table_names()
    prefix = nft.LEGACY_PREFIX
    legacy = frozenset(n[len(prefix) :] for n in names if n.startswith(prefix) and n != nft.TABLE)
    return Held(nft.kernel_footprints(dispatch, entry), comments, legacy)


def absent(service: L4Service, held: Held) -> bool:
    """Whether the kernel holds nothing of ``service``: no ``dispatch`` element jumps to
    its chain, no table of the old layout, no rule in a chain of its name."""
    key = nft.lb_key(service.lb_id)
    chain = nft.chain_name(service.lb_id)
    return key not in held.footprints and key not in held.legacy and not held.comments.get(chain)


def repairs_for(
    service: L4Service,
    tables: Mapping[str, MaglevTable],
    values: Mapping[str, list[str]],
    held: Held,
    slot_map: Callable[[str], list[str | None] | None],
) -> list[SlotRepair] | None:
    """The slot changes that make the kernel's table balance ``service`` (empty: none),
    or None when more than slots differ (it is loaded whole)."""
    key = nft.lb_key(service.lb_id)
    found = held.footprints.get(key)
    wanted = nft.footprint(service)
    if key in held.legacy or found is None:
        return None
    if (found.dispatch, found.entry_vips) != (wanted.dispatch, wanted.entry_vips):
        return None
    if held.comments.get(nft.chain_name(service.lb_id), ()) != nft.rule_comments(service, tables):
        return None
    repairs = []
    for listener in service.listeners:
        kernel = slot_map(nft.map_name(service.lb_id, listener.name))
        if kernel is None:
            return None
        desired = values[listener.name]
        if kernel != desired:
            repairs.append(slot_repair(listener.name, kernel, desired))
    return repairs


def slot_repair(listener: str, kernel: Sequence[str | None], desired: Sequence[str]) -> SlotRepair:
    """What makes a map holding ``kernel`` hold ``desired`` (both by slot)."""
    deleted = tuple(
        slot
        for slot, value in enumerate(kernel)
        if value is not None and (slot >= len(desired) or value != desired[slot])
    )
    added = tuple(
        (slot, value)
        for slot, value in enumerate(desired)
        if slot >= len(kernel) or kernel[slot] != value
    )
    return SlotRepair(listener, deleted, added)


def repair_text(lb_id: str, repairs: Sequence[SlotRepair]) -> str:
    return "".join(
        nft.render_slot_update(lb_id, r.listener, r.added, deleted=r.deleted) for r in repairs
    )


def repair_steps(lb_id: str, repairs: Sequence[SlotRepair]) -> list[nft_steps.Step]:
    return [
        step
        for r in repairs
        for step in nft_steps.slot_update(lb_id, r.listener, r.added, deleted=r.deleted)
    ]


def fill_text(service: L4Service, values: Mapping[str, list[str]]) -> str:
    """The elements of a load balancer added by ``nft.render_new(elements=False)``: its
    slots, then its ``dispatch`` and ``entry_vips`` elements (from then on it is reached)."""
    jump = f"jump {nft.chain_name(service.lb_id)}"
    lines = [
        nft.render_slot_update(service.lb_id, name, enumerate(slots), deleted=())
        for name, slots in values.items()
    ]
    wanted = nft.footprint(service)
    dispatch = ", ".join(f"{key} : {jump}" for key in sorted(wanted.dispatch))
    lines.append(f"add element ip {nft.TABLE} dispatch {{ {dispatch} }}\n")
    if wanted.entry_vips:
        vips = ", ".join(sorted(wanted.entry_vips))
        lines.append(f"add element ip {nft.TABLE} entry_vips {{ {vips} }}\n")
    return "".join(lines)


def fill_steps(service: L4Service, values: Mapping[str, list[str]]) -> list[nft_steps.Step]:
    """``fill_text`` as steps."""
    steps = [
        step
        for name, slots in values.items()
        for step in nft_steps.slot_update(service.lb_id, name, enumerate(slots), deleted=())
    ]
    wanted = nft.footprint(service)
    chain = nft.chain_name(service.lb_id)
    steps.append(
        nft_steps.Step(
            nft_steps.Verb.ADD_DISPATCH,
            "dispatch",
            keys=tuple(sorted(wanted.dispatch)),
            chain=chain,
        )
    )
    if wanted.entry_vips:
        vips = tuple(sorted(wanted.entry_vips))
        steps.append(nft_steps.Step(nft_steps.Verb.ADD_ENTRY, "entry_vips", keys=vips))
    return steps
