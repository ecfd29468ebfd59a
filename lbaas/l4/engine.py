"""The L4 engine: desired ``L4Service`` in, the kernel's table changed as little as possible.

The engine remembers what it last applied per load balancer. When only members or a
listener's allowed networks changed (same VIP, listeners, hash keys, table sizes, no
listener went from or to no members or from or to having allowed networks) it rewrites
just the slots whose member moved and the networks that changed, one transaction for the
whole load balancer;
otherwise, for a load balancer it has not applied since it started, and when the kernel
refuses a slot update (its table was changed behind the engine's back), it rewrites the
load balancer's chain and maps (checked with ``nft -c`` first), knowing what to remove from
what it applied last or, when it has not, from the kernel's table. Both leave established flows alone: conntrack keeps
the NAT binding of a flow, so a flow stays on its member whatever the table says now.

A removed or down member gets no new flows from the moment the transaction commits. Its live
flows follow its listener's ``LiveFlowPolicy`` (as the listener is now): KEEP leaves them to
end by themselves, CUT and REROUTE delete their conntrack entries after the table changed
(a TCP flow's next packet then reaches another member, which resets it; a UDP flow's next
datagram is balanced again, to a healthy member).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from lbaas.errors import InvalidRenderedConfig, LbaasError
from lbaas.l4 import adoption, nft, nft_steps
from lbaas.l4.host.base import FlowMatch, NftCommandFailed, NftOps
from lbaas.l4.maglev import MaglevTable
from lbaas.l4.service import L4Listener, L4Service, LiveFlowPolicy
from lbaas.l4.slot_values import SlotValues

log = logging.getLogger(__name__)

#: Load balancers loaded whole in one transaction by ``apply_many`` (a restore).
FULL_LOADS_PER_TRANSACTION = 200


@dataclass(frozen=True)
class ApplyReport:
    full_reload: bool
    moved_slots: int
    cut_flows: int = 0


#: Load balancers the kernel holds nothing of, added together by ``adopt_many`` (a batch
#: of 50 with 1,021-slot maps is ~1.6 MB of netlink messages).
ABSENT_PER_TRANSACTION = 50
#: A load balancer, its tables and its slot values by listener name.
_Absent = tuple[L4Service, dict[str, MaglevTable], dict[str, list[str]]]

#: What ``adopt_many`` reports for a load balancer it found as its spec says.
_KEPT = ApplyReport(full_reload=False, moved_slots=0)


@dataclass(frozen=True)
class _Applied:
    service: L4Service
    slot_values: dict[str, SlotValues]


def slot_values_of(listener: L4Listener) -> list[str]:
    """Each slot's ``address . port`` for the listener (empty: no healthy member)."""
    return nft.slot_values(listener, listener.table())


@dataclass(frozen=True)
class _Plan:
    """A slot update: its text, the same as steps (None: only the text can do it, e.g. a
    change of allowed networks, an interval set), moved slots, the new slot values."""

    text: str
    steps: list[nft_steps.Step] | None
    moved: int
    values: dict[str, list[str]]


def plan_update(old: _Applied, service: L4Service) -> _Plan:
    """The slot-update transaction from ``old`` to ``service`` (same shape)."""
    parts: list[str] = []
    steps: list[nft_steps.Step] | None = []
    moved = 0
    values: dict[str, list[str]] = {}
    before = {listener.name: listener for listener in old.service.listeners}
    for listener in service.listeners:
        if listener.allowed_cidrs:
            allow = nft.render_allow_update(service.lb_id, before[listener.name], listener)
            parts.append(allow)
            steps = None if allow else steps
        new = slot_values_of(listener)
        values[listener.name] = new
        changes = [
            (slot, value)
            for slot, (was, value) in enumerate(
                zip(old.slot_values[listener.name], new, strict=True)
            )
            if was != value
        ]
        moved += len(changes)
        parts.append(nft.render_slot_update(service.lb_id, listener.name, changes))
        if steps is not None:
            steps += nft_steps.slot_update(service.lb_id, listener.name, changes)
    return _Plan("".join(parts), steps, moved, values)


def _load(ops: NftOps, plans: Sequence[_Plan]) -> None:
    """One transaction of ``plans``: as steps when all of them have steps."""
    text = "".join(plan.text for plan in plans)
    if not text:
        return
    steps = [plan.steps for plan in plans]
    if all(step is not None for step in steps):
        ops.load_steps(text, [step for part in steps if part is not None for step in part])
    else:
        ops.load(text)


class L4Engine:
    """Programs the L4 tables of the load balancers of one network namespace."""

    def __init__(
        self,
        ops: NftOps,
        *,
        flows_max_age: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``flows_max_age``: how old (seconds) the dispatch map's listing may be when one
        load balancer's flows are read (``new_flows``); 0 reads it every time."""
        self._ops = ops
        self._flows_max_age = flows_max_age
        self._clock = clock
        # The last listing of the dispatch map's counters, by chain, and when it was read.
        self._counted: tuple[float, dict[str, dict[str, int]]] | None = None
        self._counting = threading.Lock()
        self._applied: dict[str, _Applied] = {}
        # What the kernel's table held when the engine first needed to know of a load
        # balancer it had not loaded itself (None: not read yet); entries go as they are used.
        self._kernel: dict[str, nft.Footprint] | None = None
        # Whether this engine has written the shared part (a new load balancer can then
        # be added alone, ``_added_new``).
        self._base_written = False

    def apply(self, service: L4Service) -> ApplyReport:
        """Make the kernel balance ``service``; raises what NftOps raises, changing nothing.

        A slot update the kernel refuses (its table was deleted or changed behind the
        engine's back) is retried once as a full reload.
        """
        old = self._applied.get(service.lb_id)
        report: ApplyReport | None = None
        if old is not None and old.service.shape() == service.shape():
            plan = plan_update(old, service)
            values = plan.values
            try:
                _load(self._ops, [plan])
                report = ApplyReport(full_reload=False, moved_slots=plan.moved)
            except NftCommandFailed:
                self._applied.pop(service.lb_id)
        if report is None:
            values = self._replace(service, known=old is not None)
            report = ApplyReport(full_reload=True, moved_slots=sum(map(len, values.values())))
        return self._applied_now(old, service, values, report)

    def apply_many(self, services: Iterable[L4Service]) -> dict[str, ApplyReport | LbaasError]:
        """``apply`` for several load balancers, their slot updates in one transaction.

        A node's health batch touches many load balancers at once; one ``nft`` per load
        balancer made a batch's cost grow with them (issue 34, docs/architecture.md,
        "Scale"). The services whose shape is unchanged are updated together; if the kernel
        refuses that transaction (nothing of it applied), each is applied on its own, so
        one table changed behind the engine's back does not hold up the others. Services
        that need a full reload are loaded together too, up to
        ``FULL_LOADS_PER_TRANSACTION`` at a time (one by one if refused). Each load
        balancer's outcome: its report, or the error that left it as it was.
        """
        outcomes: dict[str, ApplyReport | LbaasError] = {}
        planned: list[tuple[_Applied, L4Service, _Plan]] = []
        alone: list[L4Service] = []
        for service in services:
            old = self._applied.get(service.lb_id)
            if old is None or old.service.shape() != service.shape():
                alone.append(service)
                continue
            planned.append((old, service, plan_update(old, service)))
        try:
            _load(self._ops, [plan for _old, _service, plan in planned])
        except NftCommandFailed:
            # Each on its own: its slot update, or a full load where its table changed.
            for _old, service, _plan in planned:
                try:
                    outcomes[service.lb_id] = self.apply(service)
                except LbaasError as exc:
                    outcomes[service.lb_id] = exc
            planned = []
        for old, service, plan in planned:
            report = ApplyReport(full_reload=False, moved_slots=plan.moved)
            outcomes[service.lb_id] = self._applied_now(old, service, plan.values, report)
        for start in range(0, len(alone), FULL_LOADS_PER_TRANSACTION):
            outcomes.update(self._load_together(alone[start : start + FULL_LOADS_PER_TRANSACTION]))
        return outcomes

    def adopt_many(self, services: Sequence[L4Service]) -> dict[str, ApplyReport | LbaasError]:
        """``apply_many`` for an engine that has applied nothing yet (an agent restarting),
        keeping what the kernel holds already (``adoption``): a load balancer whose chain,
        ``dispatch`` and ``entry_vips`` are as its spec says keeps them, only its slots
        that differ are rewritten (netlink steps, all such load balancers in one
        transaction), and the others are loaded whole (``apply_many``). The shared part is
        written first, once. Where ``NftOps`` cannot read the rules, ``apply_many``."""
        held = adoption.read_held(self._ops)
        if held is None:
            return self.apply_many(services)
        try:
            self._ops.load("\n".join(nft.render_base()) + "\n")
            self._base_written = True
        except NftCommandFailed as exc:
            log.warning("shared part of the L4 table not written (%s): loading all", exc)
            return self.apply_many(services)
        self._kernel = dict(held.footprints)
        outcomes: dict[str, ApplyReport | LbaasError] = {}
        plans: list[tuple[L4Service, _Plan]] = []
        absent: list[_Absent] = []
        whole: list[L4Service] = []
        for service in services:
            tables = {listener.name: listener.table() for listener in service.listeners}
            values = {li.name: nft.slot_values(li, tables[li.name]) for li in service.listeners}
            if adoption.absent(service, held):
                absent.append((service, tables, values))
                if len(absent) == ABSENT_PER_TRANSACTION:  # added now: tables not all held
                    whole += self._added_absent(absent, outcomes)
                    absent = []
                continue
            repairs = adoption.repairs_for(service, tables, values, held, self._ops.slot_map)
            if repairs is None:
                whole.append(service)
                continue
            self._kernel.pop(nft.lb_key(service.lb_id), None)
            if not repairs:
                outcomes[service.lb_id] = self._applied_now(None, service, values, _KEPT)
                continue
            text = adoption.repair_text(service.lb_id, repairs)
            steps = adoption.repair_steps(service.lb_id, repairs)
            plans.append((service, _Plan(text, steps, sum(len(r.added) for r in repairs), values)))
        try:
            _load(self._ops, [plan for _service, plan in plans])
        except NftCommandFailed as exc:
            log.info("%d slot repairs refused together (%s): loading them whole", len(plans), exc)
            self._kernel = None  # read again for them
            whole += [service for service, _plan in plans]
            plans = []
        for service, plan in plans:
            report = ApplyReport(full_reload=False, moved_slots=plan.moved)
            outcomes[service.lb_id] = self._applied_now(None, service, plan.values, report)
        whole += self._added_absent(absent, outcomes) if absent else []
        outcomes.update(self.apply_many(whole))
        return outcomes

    def _added_absent(
        self, absent: list[_Absent], outcomes: dict[str, ApplyReport | LbaasError]
    ) -> list[L4Service]:
        """Load balancers the kernel holds nothing of (a node after a reboot) added
        together: their chains and empty maps as one text of declarations
        (``nft.render_new``), then their slots, ``dispatch`` and ``entry_vips`` elements
        as one netlink batch (``adoption.fill_steps``), which is when flows reach them.
        libnftables' parsing of every slot was most of a restore's time and memory.
        Refused, they are returned, for full loads."""
        try:
            self._ops.load("".join(nft.render_new(s, t, elements=False) for s, t, _ in absent))
            text = "".join(adoption.fill_text(s, values) for s, _t, values in absent)
            steps = [step for s, _t, v in absent for step in adoption.fill_steps(s, v)]
            self._ops.load_steps(text, steps)
        except NftCommandFailed as exc:
            log.info("%d load balancers not added together (%s)", len(absent), exc)
            return [service for service, _tables, _values in absent]
        for service, _tables, values in absent:
            moved = sum(map(len, values.values()))
            report = ApplyReport(full_reload=True, moved_slots=moved)
            outcomes[service.lb_id] = self._applied_now(None, service, values, report)
        return []

    def _load_together(self, services: list[L4Service]) -> dict[str, ApplyReport | LbaasError]:
        """Full loads of ``services`` in one transaction (an agent restoring thousands of
        load balancers: each ``nft`` reads the table's state first, so one per load
        balancer made a restore grow with their square); one by one if it is refused."""
        outcomes: dict[str, ApplyReport | LbaasError] = {}
        if len(services) > 1:
            tables = [{li.name: li.table() for li in service.listeners} for service in services]
            texts = ["\n".join(nft.render_base()) + "\n"]
            for service, table in zip(services, tables, strict=True):
                before, legacy = self._before(service.lb_id, fresh=False)
                texts.append(nft.render_full(service, table, before, legacy=legacy, base=False))
            text = "".join(texts)
            try:
                self._ops.check(text)
                self._ops.load(text)
            except (InvalidRenderedConfig, NftCommandFailed) as exc:
                log.info("%d full loads refused together (%s): one by one", len(services), exc)
                self._kernel = None  # what was taken from it for them is read again
            else:
                self._base_written = True
                for service, table in zip(services, tables, strict=True):
                    values = {
                        li.name: nft.slot_values(li, table[li.name]) for li in service.listeners
                    }
                    report = ApplyReport(
                        full_reload=True, moved_slots=sum(map(len, values.values()))
                    )
                    old = self._applied.get(service.lb_id)
                    outcomes[service.lb_id] = self._applied_now(old, service, values, report)
                return outcomes
        for service in services:
            try:
                outcomes[service.lb_id] = self.apply(service)
            except LbaasError as exc:
                outcomes[service.lb_id] = exc
        return outcomes

    def _applied_now(
        self,
        old: _Applied | None,
        service: L4Service,
        values: dict[str, list[str]],
        report: ApplyReport,
    ) -> ApplyReport:
        """Remember ``service`` as applied and cut what its policy says of ``old``'s flows."""
        compact = {name: SlotValues(slots) for name, slots in values.items()}
        self._applied[service.lb_id] = _Applied(service, compact)
        if old is None:
            return report
        return ApplyReport(report.full_reload, report.moved_slots, self._cut(old, service))

    def _replace(self, service: L4Service, *, known: bool) -> dict[str, list[str]]:
        """A full load (``known``: the engine applied it before, so the kernel may hold
        some of it even if the engine forgot it after a refused update)."""
        tables = {listener.name: listener.table() for listener in service.listeners}
        remembered = service.lb_id in self._applied
        before, legacy = self._before(service.lb_id, fresh=False)
        if known or not self._added_new(service, tables, before):
            for fresh in (False, True):
                if fresh:
                    before, legacy = self._before(service.lb_id, fresh=True)
                text = nft.render_full(service, tables, before, legacy=legacy)
                try:
                    self._ops.check(text)
                    self._ops.load(text)
                    break
                except (InvalidRenderedConfig, NftCommandFailed):
                    # What the engine remembers may be wrong (the table was changed behind
                    # its back): read the kernel and try once more.
                    if fresh or not remembered:
                        raise
            self._base_written = True
        return {
            listener.name: nft.slot_values(listener, tables[listener.name])
            for listener in service.listeners
        }

    def _added_new(
        self, service: L4Service, tables: dict[str, MaglevTable], before: nft.Footprint
    ) -> bool:
        """Load a load balancer the table does not hold with ``nft.render_new`` (which
        makes ``nft`` read only the tables first, not every chain and set): when this
        engine wrote the shared part, neither it nor the kernel's ``dispatch`` knows the
        load balancer, and it has no table of the old layout. False (nothing changed)
        when that does not hold or the kernel refuses it: then the full load decides
        (and says whether the text or the kernel refused it)."""
        lb_id = service.lb_id
        if not self._base_written or lb_id in self._applied or before != nft.Footprint():
            return False
        if self._ops.has_table(nft.LEGACY_PREFIX + nft.lb_key(lb_id)):
            return False
        try:
            # The transaction is its own check, as a slot update's is: one nft refuses
            # changes nothing, and the full load then checks what it sends.
            self._ops.load(nft.render_new(service, tables))
        except NftCommandFailed as exc:
            log.info("load balancer %s not added alone (%s): a full load", lb_id, exc)
            return False
        return True

    def _before(self, lb_id: str, *, fresh: bool) -> tuple[nft.Footprint, bool]:
        """What ``lb_id`` holds in the table now, and whether it may still have a table of
        the old layout: from memory, or (not loaded since the engine started, or
        ``fresh``) from the kernel, read once and kept for the others."""
        applied = self._applied.get(lb_id)
        if applied is not None and not fresh:
            return nft.footprint(applied.service), False
        if self._kernel is None or fresh:
            self._kernel = self._read_kernel()
        return self._kernel.pop(nft.lb_key(lb_id), nft.Footprint()), True

    def _read_kernel(self) -> dict[str, nft.Footprint]:
        dispatch = self._ops.list_json(("map", "ip", nft.TABLE, "dispatch"))
        entry = self._ops.list_json(("set", "ip", nft.TABLE, "entry_vips"))
        return nft.kernel_footprints(dispatch or {}, entry or {})

    def new_flows(self, lb_id: str) -> dict[str, int]:
        """Flows each listener received since its dispatch element was added (empty: none),
        from a listing at most ``flows_max_age`` old. Listing the map is O(load balancers)
        (an ``nft`` run and its JSON: ~0.3 s at 10,000 elements; ``nft get element`` is no
        cheaper, it reads the same cache first), and every PUT and GET of a node answers
        with its load balancer's flows: at 3,000 load balancers a converge spent 385 ms
        of the node's CPU on it (issue 34). Shared, one listing serves every answer of the
        next second: a reader that finds a listing under way waits for it rather than
        starting its own."""
        if self._flows_max_age <= 0:
            return self._count().get(nft.chain_name(lb_id), {})
        with self._counting:
            counted = self._counted
            now = self._clock()
            if counted is None or now - counted[0] > self._flows_max_age:
                counted = (now, self._count())
                self._counted = counted
        return counted[1].get(nft.chain_name(lb_id), {})

    def new_flows_of(self, lb_ids: Iterable[str]) -> dict[str, dict[str, int]]:
        """``new_flows`` of every load balancer of ``lb_ids`` from one fresh listing of the
        dispatch map's counters: one ``nft`` for a node's whole status."""
        by_chain = self._count()
        with self._counting:
            self._counted = (self._clock(), by_chain)
        return {lb_id: by_chain.get(nft.chain_name(lb_id), {}) for lb_id in lb_ids}

    def _count(self) -> dict[str, dict[str, int]]:
        listing = self._ops.list_json(("map", "ip", nft.TABLE, "dispatch"))
        return nft.dispatch_counts(listing) if listing is not None else {}

    def remove(self, lb_id: str) -> None:
        """Delete the load balancer; established flows keep their conntrack NAT."""
        known = lb_id in self._applied  # then ``before`` is exactly what it holds
        before, legacy = self._before(lb_id, fresh=False)
        text = nft.render_delete(lb_id, before, legacy=legacy)
        if known:
            self._ops.load_steps(text, nft_steps.delete(lb_id, before))
        else:
            self._ops.load(text)
        self._applied.pop(lb_id, None)

    def _cut(self, old: _Applied, service: L4Service) -> int:
        return sum(self._ops.delete_flows(flows) for flows in removed_flows(old.service, service))


def removed_flows(old: L4Service, new: L4Service) -> Iterable[FlowMatch]:
    """Flows of members that were healthy in ``old`` and are gone or down in ``new``, on the
    listeners whose policy (in ``new``) is not KEEP.

    Only listeners present in both count: a deleted listener's table is gone already.
    """
    new_listeners = {listener.name: listener for listener in new.listeners}
    for listener in old.listeners:
        current = new_listeners.get(listener.name)
        if current is None or current.live_flows is LiveFlowPolicy.KEEP:
            continue
        kept = {(m.address, m.port) for m in current.active_members() if m.healthy}
        for member in listener.active_members():
            if member.healthy and (member.address, member.port) not in kept:
                yield FlowMatch(
                    listener.protocol, old.vip, listener.port, member.address, member.port
                )
