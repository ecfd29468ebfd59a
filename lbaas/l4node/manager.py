"""The kernel load balancers of this node: the L4 engine and the per-node health checker.

For the ``distributed`` provider every node's agent runs every distributed load balancer
in its own network namespace, so a client's connection is balanced on the client's node.
A PUT stores the spec (``<root>/<lb>.json``, so an agent that restarts programs the same
tables again), hands the members with a monitor to the health checker (one group per load
balancer, member ids as keys) and applies the service with the health this node sees. The
checker's batches of changes come back through ``on_health_changes``, which re-applies the
load balancers they touch: the engine then rewrites only the moved slots. Members without
a monitor are always healthy (``NO_CHECK``); members of weight 0 get no new flows.
On the one node a spec names the entry (``entry``), the VIP is also held as an address of
the namespace (``VipHolder``) once its rules are in, and released when that ends.
On an L4 tier node, the specs that say ``announce`` (the VIP is placed in this node's group)
have their VIPs announced by the node's BGP speaker (``VipAnnouncer``): after the rules are
in on a PUT, before they go on a DELETE, so the router never sends a flow to a node without
the VIP's table. Such a service also masquerades what it forwards (NAT return), as an entry
node's does, unless its spec says ``return_mode: dsr``: then the node's ``DsrRouter`` marks
the VIP's packets from the router and routes them unchanged to their member (direct server
return, ``lbaas.tier.dsr``), programmed before the VIP is announced and removed after
it is withdrawn, and re-applied with every health change as the engine's table is. DSR
cannot change the port, so such a spec's members must listen on their listener's port.

The node withdraws its own announcements where it can (TLB: "by the node itself if it
can"), so the router stops sending it flows it cannot balance: a VIP whose table (or the
node's DSR table) could not be programmed is not announced until a later PUT or health
batch programs it, and ``withdraw_all`` (the agent stopping) withdraws every VIP and
announces nothing more. A node that dies without stopping is the watcher's to withdraw.

One lock serialises specs and health batches: a PUT ends in one nft transaction for its
load balancer, a health batch in one for every load balancer it touches (as long as their
tables keep their shape), and two must not interleave.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from lbaas.errors import Conflict, InvalidInput, LbaasError
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import HealthChange, Target
from lbaas.l4.health.wire_monitors import monitor_spec
from lbaas.l4.host.base import DsrRouter, VipAnnouncer, VipHolder
from lbaas.l4.service import (
    HashKey,
    L4Listener,
    L4Member,
    L4Protocol,
    L4Service,
    LiveFlowPolicy,
    Tombstone,
)
from lbaas.private_files import make_private_directory, write_private
from lbaas.wire.l4 import (
    L4ListenerPlacement,
    L4ListenerSpec,
    L4MemberHealth,
    L4PlacedMember,
    L4ServiceSpec,
    L4ServiceStatus,
)

log = logging.getLogger(__name__)


def health_targets(spec: L4ServiceSpec) -> list[Target]:
    """What the checker probes for ``spec``: the members of monitored listeners, at their
    monitor address and port where they have one (Octavia's ``monitor_address``)."""
    return [
        Target(
            member.id,
            member.monitor_address or member.address,
            member.monitor_port or member.port,
            monitor_spec(listener.monitor),
        )
        for listener in spec.listeners
        if listener.monitor is not None
        for member in listener.members
    ]


def local_members(spec: L4ServiceSpec) -> tuple[str, ...]:
    """The ids of the members ``spec`` marks local, sorted, once each."""
    return tuple(sorted({m.id for li in spec.listeners for m in li.members if m.local}))


def placement_of(spec: L4ServiceSpec) -> dict[str, L4ListenerPlacement]:
    """The applied Maglev places of every listener of ``spec`` (weight-0 members have none)."""
    return {
        listener.id: L4ListenerPlacement(
            table_size=listener.table_size,
            members=tuple(
                L4PlacedMember(id=m.id, place=m.place_key, weight=m.weight, backup=m.backup)
                for m in listener.members
                if m.weight > 0
            ),
            tombstones=listener.tombstones,
        )
        for listener in spec.listeners
    }


def l4_service(spec: L4ServiceSpec, healthy: dict[str, bool]) -> L4Service:
    """The engine's input: members that may get new flows, marked with this node's health."""
    return L4Service(
        lb_id=spec.loadbalancer_id,
        vip=spec.vip,
        listeners=tuple(_listener(listener, healthy) for listener in spec.listeners),
        # Traffic from the router (tier, NAT return) or the outside (entry) must come back
        # through the node to be un-NATed: both masquerade. DSR traffic skips NAT entirely.
        entry=spec.entry or (spec.announce and spec.return_mode == "nat"),
    )


def _listener(listener: L4ListenerSpec, healthy: dict[str, bool]) -> L4Listener:
    return L4Listener(
        protocol=L4Protocol(listener.protocol),
        port=listener.port,
        hash_key=HashKey(listener.hash_key),
        table_size=listener.table_size,
        live_flows=LiveFlowPolicy(listener.member_down),
        members=tuple(
            L4Member(
                m.id,
                m.address,
                m.port,
                m.weight,
                healthy.get(m.id, True),
                m.backup,
                m.place,
                m.local,
            )  # fmt: skip
            for m in listener.members
            if m.weight > 0
        ),
        tombstones=tuple(Tombstone(t.place, t.weight, t.backup) for t in listener.tombstones),
        allowed_cidrs=listener.allowed_cidrs,
        idle_timeout=listener.idle_timeout,
    )


def _is_dsr(spec: L4ServiceSpec) -> bool:
    return spec.announce and spec.return_mode == "dsr"


class L4NodeManager:
    def __init__(
        self,
        root: Path,
        engine: L4Engine,
        checker: HealthChecker,
        vips: VipHolder,
        announcer: VipAnnouncer | None = None,
        dsr: DsrRouter | None = None,
    ) -> None:
        self.root = root
        self._engine = engine
        self._vips = vips
        self._announcer = announcer  # None: not a tier node
        self._announced: frozenset[str] = frozenset()
        self._dsr = dsr  # None: DSR refused
        self._dsr_applied: tuple[L4Service, ...] = ()
        self._dsr_error: str | None = None
        self._stopping = False  # withdraw_all was called: announce nothing any more
        self._checker = checker
        self._specs: dict[str, L4ServiceSpec] = {}
        # Which load balancers each member id belongs to: a health batch finds what it
        # touches without scanning every spec (issue 34).
        self._member_lbs: dict[str, set[str]] = {}
        self._errors: dict[str, str] = {}
        self._lock = threading.RLock()

    def restore(self) -> list[str]:
        """Program again the load balancers an earlier agent left specs for: what the
        kernel still holds as a spec says is kept, slots that differ are rewritten, the
        rest loaded whole, many in one transaction (``L4Engine.adopt_many``)."""
        if not self.root.is_dir():
            return []
        specs: list[L4ServiceSpec] = []
        for path in sorted(self.root.glob("*.json")):
            try:
                spec = L4ServiceSpec.model_validate_json(path.read_bytes())
                if _is_dsr(spec):
                    self._check_dsr(spec)
                if spec.announce and self._announcer is None:
                    raise InvalidInput("asked to announce, but this node is no L4 tier node")
                specs.append(spec)
            except (ValueError, LbaasError) as exc:
                log.error("L4 service %s not restored: %s", path.name, exc)
        with self._lock:
            for spec in specs:
                self._index(spec.loadbalancer_id, self._specs.get(spec.loadbalancer_id), spec)
                self._specs[spec.loadbalancer_id] = spec
                self._checker.set_targets(spec.loadbalancer_id, health_targets(spec))
            self._apply_all([spec.loadbalancer_id for spec in specs], "restored", adopt=True)
            self._vips.hold_many(
                [s.vip for s in specs if s.entry and s.loadbalancer_id not in self._errors]
            )
            self._announce_or_log()
            return sorted(self._specs)

    def put(self, lb_id: str, spec: L4ServiceSpec) -> L4ServiceStatus:
        if spec.loadbalancer_id != lb_id:
            raise InvalidInput(f"spec of {spec.loadbalancer_id} sent to {lb_id}")
        with self._lock:
            known = self._specs.get(lb_id)
            if known is not None and spec.version < known.version:
                raise Conflict(f"version {spec.version} is older than {known.version}")
            if spec.announce and self._announcer is None:
                raise InvalidInput(
                    f"{lb_id}: asked to announce {spec.vip}, but this node is no L4 tier node "
                    "(agent.tier_bird_socket and agent.tier_vips_file are not set)"
                )
            if _is_dsr(spec):
                self._check_dsr(spec)
            make_private_directory(self.root)
            write_private(self.root / f"{lb_id}.json", spec.model_dump_json().encode())
            self._index(lb_id, known, spec)
            self._specs[lb_id] = spec
            self._checker.set_targets(lb_id, health_targets(spec))
            try:
                self._apply(lb_id)
                self._apply_dsr()
            except LbaasError:
                self._announce_or_log()  # not programmed: not announced
                raise
            self._hold_vip(known, spec)
            self._announce()
            status = self._status(lb_id, with_flows=False)
        # The flow counters list the whole dispatch map (an ``nft`` subprocess, O(load
        # balancers)): read outside the lock, as ``get`` does, or every PUT held up the
        # GETs and PUTs of the other converges for that long (issue 34: docs/architecture.md,
        # "Scale").
        flows = _flows_by_id(spec, self._engine.new_flows(lb_id))
        return status.model_copy(update={"new_flows": flows})

    def get(
        self, lb_id: str, *, placement: bool = False, local: bool = False
    ) -> L4ServiceStatus | None:
        """This node's view of ``lb_id``; ``placement``: with the applied Maglev places;
        ``local``: with the ids of the members the spec marks local."""
        with self._lock:
            if lb_id not in self._specs:
                return None
            spec = self._specs[lb_id]
            extra: dict[str, object] = {}
            if placement:
                extra["placement"] = placement_of(spec)
            if local:
                extra["local_members"] = local_members(spec)
            status = self._status(lb_id, with_flows=False)
        # The flow counters are an ``nft`` subprocess: read outside the lock, so the
        # health manager's poll (a GET per load balancer per round) does not hold up the
        # PUTs and health re-applies that need it (issue 34: docs/architecture.md, "Scale").
        extra["new_flows"] = _flows_by_id(spec, self._engine.new_flows(lb_id))
        return status.model_copy(update=extra)

    def delete(self, lb_id: str) -> None:
        with self._lock:
            known = self._specs.pop(lb_id, None)
            self._index(lb_id, known, None)
            self._announce()  # withdrawn before its tables go
            self._apply_dsr()
            self._checker.set_targets(lb_id, [])
            self._engine.remove(lb_id)
            if known is not None and known.entry:
                self._vips.release(known.vip)
            self._errors.pop(lb_id, None)
            (self.root / f"{lb_id}.json").unlink(missing_ok=True)

    def statuses(self, *, local: bool = False) -> dict[str, L4ServiceStatus]:
        """This node's view of every load balancer it carries, the flow counters of all
        of them read in one ``nft`` call outside the lock (the health manager's poll asks
        once per round, not once per load balancer: issue 34); ``local`` as for ``get``."""
        with self._lock:
            specs = dict(self._specs)
            statuses = {lb_id: self._status(lb_id, with_flows=False) for lb_id in specs}
        flows = self._engine.new_flows_of(specs)
        for lb_id, spec in specs.items():
            extra: dict[str, object] = {"new_flows": _flows_by_id(spec, flows[lb_id])}
            if local:
                extra["local_members"] = local_members(spec)
            statuses[lb_id] = statuses[lb_id].model_copy(update=extra)
        return statuses

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._specs)

    def _index(self, lb_id: str, old: L4ServiceSpec | None, new: L4ServiceSpec | None) -> None:
        for spec, add in ((old, False), (new, True)):
            for member_id in {m.id for li in spec.listeners for m in li.members} if spec else ():
                owners = self._member_lbs.setdefault(member_id, set())
                if add:
                    owners.add(lb_id)
                else:
                    owners.discard(lb_id)
                if not owners:
                    del self._member_lbs[member_id]

    def on_health_changes(self, changes: list[HealthChange]) -> None:
        """Re-apply every load balancer one of ``changes`` belongs to (checker's sink), in
        one ``nft`` transaction where their tables' shapes stay (``L4Engine.apply_many``)."""
        with self._lock:
            touched = sorted(
                {lb_id for change in changes for lb_id in self._member_lbs.get(change.key, ())}
            )
            self._apply_all(touched, "updated from health")
            self._announce_or_log()
        log.info("health changes %s applied to %s", [(c.key, c.healthy) for c in changes], touched)

    def _apply_all(self, lb_ids: list[str], what: str, *, adopt: bool = False) -> None:
        """Apply ``lb_ids`` with this node's health (``apply_many``; ``adopt``: keeping
        what the kernel holds as it should, ``adopt_many``), then the DSR table; a failure
        is kept as the load balancer's last_error (the next change retries)."""
        services = [l4_service(self._specs[lb], self._checker.states(lb)) for lb in lb_ids]
        apply = self._engine.adopt_many if adopt else self._engine.apply_many
        for lb_id, outcome in apply(services).items():
            if isinstance(outcome, LbaasError):
                self._errors[lb_id] = str(outcome)
                log.error("L4 service %s not %s: %s", lb_id, what, outcome)
            else:
                self._errors.pop(lb_id, None)
        try:
            self._apply_dsr()
        except LbaasError as exc:
            log.error("DSR table not %s: %s", what, exc)

    def _check_dsr(self, spec: L4ServiceSpec) -> None:
        if self._dsr is None:
            raise InvalidInput(f"{spec.loadbalancer_id}: this node cannot return directly (DSR)")
        for listener in spec.listeners:
            ports = {member.port for member in listener.members} - {listener.port}
            if ports:
                raise InvalidInput(
                    f"{spec.loadbalancer_id}: direct server return cannot change the port: "
                    f"the members of listener {listener.id} (port {listener.port}) must listen "
                    f"on it, not on {sorted(ports)}"
                )

    def _apply_dsr(self) -> None:
        """Give the DSR router every DSR service (health as this node sees it), if changed."""
        services = tuple(
            l4_service(spec, self._checker.states(lb_id))
            for lb_id, spec in sorted(self._specs.items())
            if _is_dsr(spec)
        )
        if self._dsr is not None and (services != self._dsr_applied or self._dsr_error):
            try:
                self._dsr.apply(services)
            except LbaasError as exc:
                self._dsr_error = str(exc)
                raise
            self._dsr_error = None
            self._dsr_applied = services

    def _hold_vip(self, known: L4ServiceSpec | None, spec: L4ServiceSpec) -> None:
        """Hold the VIP on the entry node (after its rules are in), release it elsewhere."""
        if known is not None and known.entry and (not spec.entry or known.vip != spec.vip):
            self._vips.release(known.vip)
        if spec.entry:
            self._vips.hold(spec.vip)

    def withdraw_all(self) -> None:
        """Withdraw every VIP this node announces, for good (the agent is stopping)."""
        with self._lock:
            self._stopping = True
            self._announce_or_log()

    def _announce_or_log(self) -> None:
        try:
            self._announce()
        except LbaasError as exc:
            log.error("tier: announcements not updated: %s", exc)

    def _announce(self) -> None:
        """Announce exactly the VIPs of the specs that say so and whose tables are in, when
        that set changed."""
        wanted = frozenset(
            spec.vip
            for lb_id, spec in self._specs.items()
            if spec.announce
            and not self._stopping
            and lb_id not in self._errors
            and not (_is_dsr(spec) and self._dsr_error is not None)
        )
        if self._announcer is not None and wanted != self._announced:
            self._announcer.announce(wanted)
            self._announced = wanted
            log.info("tier: announcing %s", sorted(wanted))

    def announced(self) -> frozenset[str]:
        with self._lock:
            return self._announced

    def _apply(self, lb_id: str) -> None:
        spec = self._specs[lb_id]
        try:
            report = self._engine.apply(l4_service(spec, self._checker.states(lb_id)))
        except LbaasError as exc:
            self._errors[lb_id] = str(exc)
            raise
        self._errors.pop(lb_id, None)
        log.debug("L4 service %s applied: %s", lb_id, report)

    def _status(self, lb_id: str, *, with_flows: bool = True) -> L4ServiceStatus:
        spec = self._specs[lb_id]
        states = self._checker.states(lb_id)
        members: dict[str, L4MemberHealth] = {}
        for listener in spec.listeners:
            for member in listener.members:
                seen = states.get(member.id) if listener.monitor is not None else None
                members[member.id] = "NO_CHECK" if seen is None else ("UP" if seen else "DOWN")
        flows = self._engine.new_flows(lb_id) if with_flows else {}
        return L4ServiceStatus(
            loadbalancer_id=lb_id,
            applied_version=spec.version,
            entry=spec.entry,
            announce=spec.announce,
            members=members,
            new_flows=_flows_by_id(spec, flows),
            last_error=self._errors.get(lb_id) or (self._dsr_error if _is_dsr(spec) else None),
        )


def _flows_by_id(spec: L4ServiceSpec, flows: dict[str, int]) -> dict[str, int]:
    """The engine's flow counts (by table listener name) by listener id."""
    by_name = {f"{li.protocol}_{li.port}": li.id for li in spec.listeners}
    return {by_name[name]: count for name, count in flows.items() if name in by_name}
