"""ACTIVE_STANDBY: a load balancer served by a pair of amphorae that share its VIP by VRRP.

Each amphora has its own VRRP port (``vrrp_ip``) on the VIP subnet; keepalived in each
(agent side, ``lbaas.amphora.vrrp``) holds the VIP on the MASTER, and the HAProxys are
``peers`` so their stick tables are the same on both. The MASTER has the higher
priority; both start BACKUP with ``nopreempt``, so the first election follows the
priorities and an amphora that returns never takes the VIP back.

Failover works on one amphora at a time, so the other keeps the VIP serving all along:
the amphorae marked ``failover_pending`` (the health manager's choice, or the amphora
failover API's) are replaced, or both when none is marked (load balancer failover), the
BACKUP first. Replacing one means: the survivor becomes MASTER (with the MASTER's
priority, which a keepalived reload takes without an election), the old amphora is
deleted by its agent (a stopping MASTER sends priority 0, so the survivor takes over at
once), and a new amphora joins as BACKUP. A missing member (a pair left half-built) is
simply added as BACKUP.

Where each amphora runs is the store's choice, made in the transaction that creates it
(``PairStore.add_pair_member``, ``placement.place_pair_member``): two distinct live hosts
of the zone, least-loaded first; a replacement never goes on the survivor's host and
keeps off the failed one's when it can. Each member's spec goes to its own host's agent
(``AgentFor``). ``lbaas serve`` alone (its own agent the only host) puts both on it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lbaas.errors import ConvergeError, PermanentError
from lbaas.fleet.client import AgentClient
from lbaas.model.enums import AmphoraRole
from lbaas.model.fleet import HostAddress
from lbaas.model.graph import LoadBalancer
from lbaas.providers.amphora.placement import PairPlacementImpossible
from lbaas.providers.amphora.store.base import AmphoraStore, PairMember, PairSite, PairStore
from lbaas.render.haproxy.context import HaproxyPeer, HaproxyPeers
from lbaas.wire.amphora import AmphoraSpec, AmphoraStatus, VrrpSpec
from lbaas.wire.datapath import HAPROXY_PEER_PORT, VRRP_PROTOCOL, AllowedPeer, VipFilter

if TYPE_CHECKING:
    from lbaas.db.jobs.job_queue import Claim

#: How long a MASTER's replacement waits for the survivor's keepalived to run the pair.
READY_TIMEOUT = 10.0
READY_POLL = 0.1
_READY = ("BACKUP", "MASTER")

#: The amphora id of the missing peer of a degraded pair (never an amphora's: not a UUID).
_GHOST = "missing-peer"

log = logging.getLogger(__name__)

MASTER_PRIORITY = 200
BACKUP_PRIORITY = 100

#: Builds one amphora's whole spec: (graph, fence, member, peers, vrrp) -> spec.
SpecBuilder = Callable[[LoadBalancer, "Claim", PairMember, HaproxyPeers, VrrpSpec], AmphoraSpec]
#: The agent of a host (None: the single configured agent).
AgentFor = Callable[[HostAddress | None], AgentClient]
#: Removes a failed-over amphora through its agent (tolerating a lost host).
Remover = Callable[[str], None]


@dataclass(frozen=True)
class VrrpTimers:
    advert_interval_ms: int
    realtime_priority: int | None


#: IP protocol of HAProxy's peers connection (TCP, to ``HAPROXY_PEER_PORT``) from the peer.
_TCP = 6


def pair_filter(base: VipFilter | None, vrrp: VrrpSpec) -> VipFilter | None:
    """The VIP leg's filter opened to the peer: its VRRP adverts and its HAProxy's peers
    connection (both come from the peer's VRRP address)."""
    if base is None:
        return None
    peers = (
        AllowedPeer(address=vrrp.peer_address, protocol=VRRP_PROTOCOL),
        AllowedPeer(address=vrrp.peer_address, protocol=_TCP),
    )
    return base.model_copy(update={"peers": (*base.peers, *peers)})


def vrrp_id_of(loadbalancer_id: str) -> int:
    """A virtual router id (1..255) fixed by the load balancer: the same on both."""
    return int(hashlib.sha256(loadbalancer_id.encode()).hexdigest(), 16) % 255 + 1


class PairConverger:
    """Converges an ACTIVE_STANDBY load balancer's pair."""

    def __init__(
        self,
        store: AmphoraStore,
        pairs: PairStore,
        agents: AgentFor,
        remove: Remover,
        site: PairSite,
        timers: VrrpTimers,
        *,
        ready_timeout: float = READY_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._pairs = pairs
        self._agents = agents
        self._remove = remove
        self._site = site
        self._timers = timers
        self._ready_timeout = ready_timeout
        self._sleep = sleep

    def converge(
        self, graph: LoadBalancer, fence: Claim, rebuild: bool, build: SpecBuilder
    ) -> AmphoraStatus:
        """Make the pair whole, replace what must be replaced, push both specs."""
        members = self._pairs.pair_members(graph.id)
        doomed = [m for m in members if m.failover_pending] or (members if rebuild else [])
        # BACKUP first: while it is rebuilt the MASTER keeps serving, undisturbed.
        for old in sorted(doomed, key=lambda m: m.role == AmphoraRole.MASTER):
            members = self._replace(graph, fence, members, old, build)
        members = self._complete(graph, fence, members)
        return self._push(graph, fence, members, build)

    def _replace(
        self,
        graph: LoadBalancer,
        fence: Claim,
        members: list[PairMember],
        old: PairMember,
        build: SpecBuilder,
    ) -> list[PairMember]:
        survivors = [m for m in members if m.amphora_id != old.amphora_id]
        for survivor in survivors:
            self._pairs.set_role(fence, survivor.amphora_id, AmphoraRole.MASTER, MASTER_PRIORITY)
        survivors = [_as_master(m) for m in survivors]
        if old.role == AmphoraRole.MASTER:
            self._await_ready(graph, survivors)
        # Deleting stops its keepalived first: a stopping MASTER sends priority 0 and the
        # survivor takes the VIP at once; it gets the MASTER's priority with the next push.
        self._remove(old.amphora_id)
        self._store.retire(fence, old.amphora_id)
        members = survivors
        # Its host is probably the one that failed: the replacement keeps off it if it can.
        avoid = frozenset() if old.host is None else frozenset({old.host.host_id})
        members = self._complete(graph, fence, members, avoid)
        # The pair is whole and running again before anything else is replaced.
        self._push(graph, fence, members, build)
        return members

    def _await_ready(self, graph: LoadBalancer, survivors: list[PairMember]) -> None:
        """Wait until each survivor's keepalived runs the pair (BACKUP or MASTER) before
        the MASTER is removed: a new BACKUP still starting (load balancer failover
        replaces the BACKUP first, then the MASTER at once) could not take the VIP the
        stopping MASTER hands over. Bounded: past ``ready_timeout`` the failover goes on
        (a dead survivor is no reason to keep a failed MASTER)."""
        deadline = time.monotonic() + self._ready_timeout
        for member in survivors:
            while True:
                try:
                    status = self._agents(member.host).get_amphora(member.amphora_id)
                except ConvergeError as exc:
                    log.warning("amphora %s: no state (%s)", member.amphora_id, exc)
                    break
                state = None if status is None else status.vrrp_state
                if state in _READY:
                    break
                if time.monotonic() >= deadline:
                    log.warning(
                        "load balancer %s: amphora %s not in VRRP BACKUP or MASTER after "
                        "%.0fs (%s); replacing the MASTER anyway",
                        graph.id,
                        member.amphora_id,
                        self._ready_timeout,
                        state,
                    )
                    return
                self._sleep(READY_POLL)

    def _complete(
        self,
        graph: LoadBalancer,
        fence: Claim,
        members: list[PairMember],
        avoid: frozenset[str] = frozenset(),
    ) -> list[PairMember]:
        """Join members until the pair is whole. With a survivor serving and no other
        host to take its peer (the peer's host is down), the pair is left degraded: the
        survivor keeps the VIP alone and the next converge, which a host coming UP
        queues (``lbaas.db.amphorae.pair_repair``), tries again; a new pair is refused instead."""
        while len(members) < 2:
            try:
                members = self._join(graph, fence, members, avoid)
            except PairPlacementImpossible as exc:
                if not members:
                    raise
                log.warning(
                    "load balancer %s: ACTIVE_STANDBY pair degraded to one amphora (%s), "
                    "its peer is rebuilt when a host can take it",
                    graph.id,
                    exc.operator_message,
                )
                return members
        return members

    def _join(
        self,
        graph: LoadBalancer,
        fence: Claim,
        members: list[PairMember],
        avoid: frozenset[str] = frozenset(),
    ) -> list[PairMember]:
        """Add one amphora: MASTER when the pair is empty, BACKUP otherwise; on a host
        none of ``members`` is on."""
        subnet = graph.vip.subnet_id
        role, priority = (
            (AmphoraRole.BACKUP, BACKUP_PRIORITY)
            if members
            else (AmphoraRole.MASTER, MASTER_PRIORITY)
        )
        new = self._pairs.add_pair_member(
            fence,
            site=self._site,
            pair_hosts=frozenset(m.host.host_id for m in members if m.host is not None),
            avoid=avoid,
            vip_subnet_id=subnet,
            vip_address=graph.vip.address,
            ha_port_id=graph.vip.port_id or None,
            role=role,
            priority=priority,
            vrrp_id=vrrp_id_of(graph.id),
        )
        return [*members, new]

    def _push(
        self, graph: LoadBalancer, fence: Claim, members: list[PairMember], build: SpecBuilder
    ) -> AmphoraStatus:
        """Send each member its spec (MASTER first); the last status."""
        if len(members) == 1:
            members = [*members, self._ghost_peer(graph, members[0])]
        if len(members) != 2:
            raise PermanentError(f"an ACTIVE_STANDBY pair has 2 amphorae, not {len(members)}")
        peers = tuple(HaproxyPeer(m.amphora_id, m.vrrp_address, HAPROXY_PEER_PORT) for m in members)
        status: AmphoraStatus | None = None
        live = [m for m in members if m.amphora_id != _GHOST]
        for member in sorted(live, key=lambda m: m.role != AmphoraRole.MASTER):
            (peer,) = [m for m in members if m.amphora_id != member.amphora_id]
            vrrp = VrrpSpec(
                role=AmphoraRole(member.role),
                priority=member.priority,
                vrrp_id=member.vrrp_id,
                own_address=member.vrrp_address,
                peer_address=peer.vrrp_address,
                advert_interval_ms=self._timers.advert_interval_ms,
                realtime_priority=self._timers.realtime_priority,
            )
            spec = build(graph, fence, member, HaproxyPeers(member.amphora_id, peers), vrrp)
            status = self._agents(member.host).put_amphora(member.amphora_id, spec)
            if status.vrrp_interface is not None:
                self._pairs.record_vrrp_interface(fence, member.amphora_id, status.vrrp_interface)
            self._store.mark_serving(fence, member.amphora_id)
        assert status is not None  # members has two entries
        return status

    def _ghost_peer(self, graph: LoadBalancer, survivor: PairMember) -> PairMember:
        """The peer a lone survivor is configured with: its last peer's address, so its
        keepalived and HAProxy keep a valid configuration until a new peer joins."""
        address = self._pairs.last_peer_address(graph.id, survivor.amphora_id)
        if address is None:
            raise PermanentError("an ACTIVE_STANDBY pair has 1 amphora and no peer to name")
        return PairMember(_GHOST, AmphoraRole.BACKUP, BACKUP_PRIORITY, survivor.vrrp_id, address)


def _as_master(member: PairMember) -> PairMember:
    return PairMember(
        member.amphora_id,
        AmphoraRole.MASTER,
        MASTER_PRIORITY,
        member.vrrp_id,
        member.vrrp_address,
        member.failover_pending,
        member.host,
    )
