"""``DatabaseAmphoraStore``: the amphora provider's allocations in the lbaas database.

Every writing method is one write transaction that first locks the job row and checks the
claim (``job_queue.check_fence``) — the fence the final settle uses — so a worker that lost
its lease cannot create an amphora row or a port, even when its lease is taken over while
it waits for the agent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lbaas.db.amphorae import amphora_repo
from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.db.jobs import job_queue
from lbaas.db.tables import AmphoraRow, AvailabilityZoneProfileRow, AvailabilityZoneRow
from lbaas.model.enums import AmphoraRole, AmphoraStatus, HostStatus
from lbaas.model.fleet import HostAddress, HostLoad
from lbaas.network.allocation import VipRequest, allocate_vip
from lbaas.providers.amphora.placement import place_one, place_pair_member
from lbaas.providers.amphora.store.base import (
    AgentLocation,
    AmphoraChoice,
    PairMember,
    PairSite,
)
from lbaas.providers.base import LeaseLost

if TYPE_CHECKING:
    from lbaas.db.jobs.job_queue import Claim


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _pair_host(
    session: Any, site: PairSite, pair_hosts: frozenset[str], avoid: frozenset[str]
) -> HostLoad | None:
    """The host of a new pair member; None: no fleet, the one configured agent."""
    enrolled = {h.host_id for h in host_repo.list_hosts(session)}
    if not enrolled:
        return None
    loads = host_repo.live_host_loads(session, site.zone)
    if enrolled == {site.single_host}:  # lbaas serve alone: both members on its agent
        return place_one(loads, zone=site.zone)
    return place_pair_member(loads, zone=site.zone, pair_hosts=pair_hosts, avoid=avoid)


def _host_address(session: Any, compute_id: str | None) -> HostAddress | None:
    where = None if compute_id is None else host_repo.host_of(session, compute_id)
    return None if where is None else where[0]


def _unfinished_rebuild(session: Any, current: list[AmphoraRow]) -> AmphoraRow | None:
    """The amphora an earlier attempt of this rebuild created: the newest, when it never
    got serving or when older ones are still live (a rebuild in namespaces builds the new
    amphora before it removes the old: a retry after a failed removal finds both).

    A rebuild job keeps asking for a rebuild until it settles, so without this every
    retry (an agent down for a while) created one more amphora and retired the one
    before: six retired in a row for one load balancer during agent kills. The newest is
    resumed instead (a PUT converges it whatever an earlier attempt left), unless its host
    is DOWN (placed on a host lost meanwhile): then every one is retired and a new one
    placed.
    """
    if not current:
        return None
    newest = current[-1]
    if len(current) < 2 and newest.status != AmphoraStatus.PENDING_CREATE:
        return None
    where = None if newest.compute_id is None else host_repo.host_of(session, newest.compute_id)
    return newest if where is None or where[1] is HostStatus.UP else None


class DatabaseAmphoraStore:
    """``AmphoraStore`` over the lbaas database."""

    def __init__(self, database: Database) -> None:
        self._db = database

    @contextmanager
    def _fenced(self, fence: Claim) -> Iterator[Any]:
        """A write transaction in which ``fence`` still holds its lease."""
        with self._db.write() as session:
            if job_queue.check_fence(session, fence) is job_queue.Fence.LOST:
                raise LeaseLost(fence.loadbalancer_id, fence.owner)
            yield session

    def live_amphorae(self, loadbalancer_id: str) -> list[str]:
        with self._db.read() as session:
            return [a.id for a in amphora_repo.amphorae_of(session, loadbalancer_id)]

    def choose_amphora(
        self,
        fence: Claim,
        *,
        zone: str | None,
        vip_address: str,
        rebuild: bool,
        legacy_host: str,
    ) -> AmphoraChoice:
        with self._fenced(fence) as session:
            current = amphora_repo.amphorae_of(session, fence.loadbalancer_id)
            if len(current) == 1 and not rebuild:
                where = host_repo.host_of(session, current[0].compute_id or "")
                return AmphoraChoice(current[0].id, host=None if where is None else where[0])
            # Several live: a rebuild left half-way, finished by any converge.
            resumed = _unfinished_rebuild(session, current)
            if resumed is not None:  # a retry of this rebuild: no further amphora
                where = host_repo.host_of(session, resumed.compute_id or "")
                return AmphoraChoice(
                    resumed.id,
                    retiring=tuple(a.id for a in current if a.id != resumed.id),
                    host=None if where is None else where[0],
                )
            retiring = tuple(a.id for a in current)
            if not host_repo.any_host(session):  # no fleet: the one configured agent
                amp = amphora_repo.create_amphora(
                    session, fence.loadbalancer_id, legacy_host, vip_address, _now()
                )
                return AmphoraChoice(amp.id, retiring=retiring)
            avoid = frozenset(a.compute_id for a in current if a.compute_id is not None)
            chosen = place_one(host_repo.live_host_loads(session, zone), zone=zone, avoid=avoid)
            amp = amphora_repo.create_amphora(
                session,
                fence.loadbalancer_id,
                chosen.where.address,
                vip_address,
                _now(),
                compute_id=chosen.host_id,
            )
            return AmphoraChoice(amp.id, retiring=retiring, host=chosen.where)

    def agent_of(self, amphora_id: str) -> AgentLocation | None:
        with self._db.read() as session:
            host_id = host_repo.amphora_hosts(session, [amphora_id]).get(amphora_id)
            where = None if host_id is None else host_repo.host_of(session, host_id)
            if where is None or host_id is None:
                return None
            return AgentLocation(*where, heard_at=host_repo.heard_at(session, host_id))

    def compute_zone(self, availability_zone: str | None) -> str | None:
        if availability_zone is None:
            return None
        with self._db.read() as session:
            zone = session.get(AvailabilityZoneRow, availability_zone)
            profile = (
                None
                if zone is None
                else session.get(AvailabilityZoneProfileRow, zone.availability_zone_profile_id)
            )
            data = {} if profile is None else json.loads(profile.availability_zone_data or "{}")
        value = data.get("compute_zone") if isinstance(data, dict) else None
        return value if isinstance(value, str) and value else None

    def member_addresses(
        self, fence: Claim, amphora_id: str, subnet_ids: Sequence[str]
    ) -> dict[str, str]:
        addresses: dict[str, str] = {}
        with self._fenced(fence) as session:
            for subnet_id in subnet_ids:
                address = amphora_repo.port_address(session, amphora_id, subnet_id)
                if address is None:
                    request = VipRequest(subnet_id=subnet_id)
                    address = allocate_vip(session, request, amphora_id, _now()).address
                addresses[subnet_id] = address
        return addresses

    def retire(self, fence: Claim, amphora_id: str) -> None:
        with self._fenced(fence) as session:
            amphora_repo.set_status(session, amphora_id, AmphoraStatus.DELETED, _now())

    def mark_serving(self, fence: Claim, amphora_id: str) -> None:
        with self._fenced(fence) as session:
            amphora_repo.mark_serving(session, amphora_id, _now())

    # --- ACTIVE_STANDBY (PairStore) ------------------------------------------------------

    def pair_members(self, loadbalancer_id: str) -> list[PairMember]:
        with self._db.read() as session:
            return [
                PairMember(
                    amphora_id=a.id,
                    role=a.role or AmphoraRole.BACKUP,
                    priority=a.vrrp_priority or 0,
                    vrrp_id=a.vrrp_id or 0,
                    vrrp_address=a.vrrp_ip or "",
                    failover_pending=a.failover_pending,
                    host=_host_address(session, a.compute_id),
                )
                for a in amphora_repo.amphorae_of(session, loadbalancer_id)
            ]

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
        with self._fenced(fence) as session:
            now = _now()
            chosen = _pair_host(session, site, pair_hosts, avoid)
            amp = amphora_repo.create_pair_member(
                session,
                fence.loadbalancer_id,
                site.legacy_host if chosen is None else chosen.where.address,
                vip_address,
                ha_port_id,
                role,
                (vrrp_id, priority),
                now,
                compute_id=None if chosen is None else chosen.host_id,
            )
            port = allocate_vip(session, VipRequest(subnet_id=vip_subnet_id), amp.id, now)
            amphora_repo.set_vrrp_port(session, amp.id, port.port_id, port.address)
            where = None if chosen is None else chosen.where
            return PairMember(amp.id, role, priority, vrrp_id, port.address, host=where)

    def set_role(self, fence: Claim, amphora_id: str, role: str, priority: int) -> None:
        with self._fenced(fence) as session:
            amphora_repo.set_role(session, amphora_id, role, priority, _now())

    def last_peer_address(self, loadbalancer_id: str, survivor: str) -> str | None:
        with self._db.read() as session:
            return amphora_repo.last_retired_vrrp_ip(session, loadbalancer_id, survivor)

    def record_vrrp_interface(self, fence: Claim, amphora_id: str, interface: str) -> None:
        with self._fenced(fence) as session:
            amphora_repo.set_vrrp_interface(session, amphora_id, interface)
