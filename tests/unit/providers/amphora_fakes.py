"""Fakes for the amphora provider: an in-memory ``AmphoraStore`` and an agent that records.

``MemoryAmphoraStore`` keeps the same rules as the database form: every writing method
checks the fence first and raises ``LeaseLost``, writing nothing, when the claim's owner is
in ``lost`` (its lease was taken over).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from lbaas.db.jobs.job_queue import Claim
from lbaas.errors import AgentUnreachable
from lbaas.model.enums import AmphoraStatus as Status
from lbaas.model.enums import HostStatus
from lbaas.model.fleet import HostAddress, HostLoad
from lbaas.providers.amphora.placement import place_one, place_pair_member
from lbaas.providers.amphora.store.base import AgentLocation, AmphoraChoice, PairMember, PairSite
from lbaas.providers.base import LeaseLost
from lbaas.wire.amphora import AgentInfo, AmphoraSpec, AmphoraStatus
from lbaas.wire.versions import WIRE_VERSION


@dataclass
class StoredAmphora:
    loadbalancer_id: str
    host: str
    status: Status
    pair: PairMember | None = None
    vrrp_interface: str | None = None


GONE = (Status.DELETED, Status.PENDING_DELETE)


class MemoryAmphoraStore:
    """``AmphoraStore`` in memory, fenced by a set of lease owners that lost their lease."""

    def __init__(self) -> None:
        self.amphorae: dict[str, StoredAmphora] = {}
        self.ports: dict[tuple[str, str], str] = {}  # (amphora, subnet) -> address
        self.lost: set[str] = set()
        # The fleet: host -> (zone, capacity, status); empty means the one configured agent.
        self.fleet: dict[HostAddress, tuple[str, int, HostStatus]] = {}
        self.hosts: dict[str, HostAddress] = {}  # amphora -> its host
        self.heard_at: dict[str, float] = {}  # host id -> its last heartbeat (never: absent)
        self.zone_of: dict[str, str] = {}  # availability zone name -> compute_zone
        self.zones_asked: list[str | None] = []
        self._ids = itertools.count(1)

    def _check(self, fence: Claim) -> None:
        if fence.owner in self.lost:
            raise LeaseLost(fence.loadbalancer_id, fence.owner)

    def live_amphorae(self, loadbalancer_id: str) -> list[str]:
        gone = (Status.DELETED, Status.PENDING_DELETE)
        return [
            amphora_id
            for amphora_id, amp in self.amphorae.items()
            if amp.loadbalancer_id == loadbalancer_id and amp.status not in gone
        ]

    def choose_amphora(
        self,
        fence: Claim,
        *,
        zone: str | None,
        vip_address: str,
        rebuild: bool,
        legacy_host: str,
    ) -> AmphoraChoice:
        self._check(fence)
        self.zones_asked.append(zone)
        current = self.live_amphorae(fence.loadbalancer_id)
        if len(current) == 1 and not rebuild:
            return AmphoraChoice(current[0], host=self.hosts.get(current[0]))
        if current:  # a retry of this rebuild (see the database store)
            resumed = current[-1]
            host = self.hosts.get(resumed)
            up = host is None or self.fleet[host][2] is HostStatus.UP
            half_way = len(current) > 1 or self.amphorae[resumed].status is Status.PENDING_CREATE
            if half_way and up:
                others = tuple(a for a in current if a != resumed)
                return AmphoraChoice(resumed, retiring=others, host=host)
        amphora_id = f"amp-{next(self._ids)}"
        host = None
        if self.fleet:
            avoid = frozenset(h.host_id for a in current if (h := self.hosts.get(a)) is not None)
            chosen = place_one(self._loads(zone), zone=zone, avoid=avoid)
            host = chosen.where
            self.hosts[amphora_id] = host
        self.amphorae[amphora_id] = StoredAmphora(
            fence.loadbalancer_id,
            legacy_host if host is None else host.address,
            Status.PENDING_CREATE,
        )
        return AmphoraChoice(amphora_id, retiring=tuple(current), host=host)

    def _loads(self, zone: str | None) -> list[HostLoad]:
        live = [a for a, amp in self.amphorae.items() if amp.status not in GONE]
        return [
            HostLoad(where, host_zone, capacity, sum(1 for a in live if self.hosts.get(a) == where))
            for where, (host_zone, capacity, status) in self.fleet.items()
            if status is HostStatus.UP and zone in (None, host_zone)
        ]

    def agent_of(self, amphora_id: str) -> AgentLocation | None:
        host = self.hosts.get(amphora_id)
        if host is None:
            return None
        return AgentLocation(host, self.fleet[host][2], self.heard_at.get(host.host_id))

    def compute_zone(self, availability_zone: str | None) -> str | None:
        return self.zone_of.get(availability_zone or "")

    def member_addresses(
        self, fence: Claim, amphora_id: str, subnet_ids: Sequence[str]
    ) -> dict[str, str]:
        self._check(fence)
        for subnet_id in subnet_ids:
            self.ports.setdefault((amphora_id, subnet_id), f"10.9.{len(self.ports)}.10")
        return {subnet_id: self.ports[(amphora_id, subnet_id)] for subnet_id in subnet_ids}

    def retire(self, fence: Claim, amphora_id: str) -> None:
        self._check(fence)
        self.amphorae[amphora_id].status = Status.DELETED
        for key in [key for key in self.ports if key[0] == amphora_id]:
            del self.ports[key]

    def mark_serving(self, fence: Claim, amphora_id: str) -> None:
        self._check(fence)
        self.amphorae[amphora_id].status = Status.ALLOCATED


class MemoryPairStore(MemoryAmphoraStore):
    """Also a ``PairStore``: pair members with VRRP addresses 10.0.0.<n>."""

    def pair_members(self, loadbalancer_id: str) -> list[PairMember]:
        found = []
        for amphora_id in self.live_amphorae(loadbalancer_id):
            pair = self.amphorae[amphora_id].pair
            assert pair is not None
            found.append(pair)
        return found

    def add_pair_member(
        self,
        fence: Claim,
        *,
        site: PairSite,
        pair_hosts: frozenset[str],
        avoid: frozenset[str],
        vip_subnet_id: str,
        vip_address: str,
        ha_port_id: str | None,
        role: str,
        priority: int,
        vrrp_id: int,
    ) -> PairMember:
        self._check(fence)
        host = None  # placed as the database store does
        if {h.host_id for h in self.fleet} == {site.single_host}:
            host = place_one(self._loads(site.zone), zone=site.zone).where
        elif self.fleet:
            loads = self._loads(site.zone)
            chosen = place_pair_member(loads, zone=site.zone, pair_hosts=pair_hosts, avoid=avoid)
            host = chosen.where
        amphora_id = f"amp-{next(self._ids)}"
        member = PairMember(
            amphora_id, role, priority, vrrp_id, f"10.0.0.{len(self.amphorae) + 20}", host=host
        )
        if host is not None:
            self.hosts[amphora_id] = host
        address = site.legacy_host if host is None else host.address
        self.amphorae[amphora_id] = StoredAmphora(
            fence.loadbalancer_id, address, Status.PENDING_CREATE, member
        )
        return member

    def set_role(self, fence: Claim, amphora_id: str, role: str, priority: int) -> None:
        self._check(fence)
        amp = self.amphorae[amphora_id]
        assert amp.pair is not None
        amp.pair = replace(amp.pair, role=role, priority=priority)

    def record_vrrp_interface(self, fence: Claim, amphora_id: str, interface: str) -> None:
        self._check(fence)
        self.amphorae[amphora_id].vrrp_interface = interface

    def last_peer_address(self, loadbalancer_id: str, survivor: str) -> str | None:
        retired = [
            a.pair.vrrp_address
            for amphora_id, a in self.amphorae.items()
            if a.loadbalancer_id == loadbalancer_id
            and amphora_id != survivor
            and a.pair is not None
            and amphora_id not in self.live_amphorae(loadbalancer_id)
        ]
        return retired[-1] if retired else None

    def fail(self, amphora_id: str) -> None:
        """What the health manager or the amphora failover API marks."""
        amp = self.amphorae[amphora_id]
        assert amp.pair is not None
        amp.pair = replace(amp.pair, failover_pending=True)


@dataclass
class RecordingAgent:
    """Stands in for ``AgentClient``: records specs and deletes, answers as a loopback agent."""

    amphora_root: str = "/srv/amphorae"
    mode: Literal["loopback", "netns"] = "loopback"
    specs: dict[str, AmphoraSpec] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    log: list[tuple[str, str]] = field(default_factory=list)
    calls: int = 0
    gets: list[str] = field(default_factory=list)
    starting: dict[str, int] = field(default_factory=dict)
    unreachable: bool = False
    """Every call fails as a lost host's agent does."""
    wire_version: int | None = WIRE_VERSION
    """None: an agent of the release before versions were stated."""

    def _reach(self) -> None:
        if self.unreachable:
            raise AgentUnreachable("agent gone", 2.0, "connection refused")

    def info(self) -> AgentInfo:
        self._reach()
        self.calls += 1
        return AgentInfo(
            mode=self.mode,
            haproxy_version="test",
            amphora_root=self.amphora_root,
            wire_version=self.wire_version,
        )

    def put_amphora(self, amphora_id: str, spec: AmphoraSpec) -> AmphoraStatus:
        self._reach()
        self.calls += 1
        self.specs[amphora_id] = spec
        self.log.append(("put", amphora_id))
        link = None if spec.vrrp is None else f"vip-{amphora_id}"
        return AmphoraStatus(
            amphora_id=amphora_id, running=True, last_outcome="STARTED", vrrp_interface=link
        )

    def get_amphora(self, amphora_id: str) -> AmphoraStatus | None:
        """As the agent answers; an ACTIVE_STANDBY amphora reports BACKUP once
        ``starting[amphora_id]`` polls (keepalived still starting) have been answered."""
        self._reach()
        self.gets.append(amphora_id)
        spec = self.specs.get(amphora_id)
        if spec is None:
            return None
        state = None
        if spec.vrrp is not None:
            left = self.starting.get(amphora_id, 0)
            self.starting[amphora_id] = max(0, left - 1)
            state = None if left else "BACKUP"
        return AmphoraStatus(amphora_id=amphora_id, running=True, vrrp_state=state)

    def delete_amphora(self, amphora_id: str) -> None:
        self._reach()
        self.calls += 1
        self.deleted.append(amphora_id)
        self.log.append(("delete", amphora_id))

    def close(self) -> None:
        return None
