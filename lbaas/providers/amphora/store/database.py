"""``DatabaseAmphoraStore``: the amphora provider's allocations in the lbaas database.

Every writing method is one write transaction that first locks the job row and checks the
claim (``job_queue.check_fence``) — the fence the final settle uses — so a worker that lost
its lease cannot create an amphora row or a port, even when its lease is taken over while
it waits for the agent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lbaas.db import amphora_repo, job_queue
from lbaas.db.engine import Database
from lbaas.model.enums import AmphoraRole, AmphoraStatus
from lbaas.network.allocation import VipRequest, allocate_vip
from lbaas.providers.amphora.store.base import AmphoraChoice, PairMember
from lbaas.providers.base import LeaseLost

if TYPE_CHECKING:
    from lbaas.db.job_queue import Claim


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


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
        self, fence: Claim, *, host: str, vip_address: str, rebuild: bool
    ) -> AmphoraChoice:
        with self._fenced(fence) as session:
            current = [a.id for a in amphora_repo.amphorae_of(session, fence.loadbalancer_id)]
            if current and not rebuild:
                return AmphoraChoice(current[0])
            amp = amphora_repo.create_amphora(
                session, fence.loadbalancer_id, host, vip_address, _now()
            )
            return AmphoraChoice(amp.id, retiring=tuple(current))

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
                )
                for a in amphora_repo.amphorae_of(session, loadbalancer_id)
            ]

    def add_pair_member(
        self,
        fence: Claim,
        *,
        host: str,
        vip_subnet_id: str,
        vip_address: str,
        ha_port_id: str | None,
        role: str,
        priority: int,
        vrrp_id: int,
    ) -> PairMember:
        with self._fenced(fence) as session:
            now = _now()
            amp = amphora_repo.create_pair_member(
                session,
                fence.loadbalancer_id,
                host,
                vip_address,
                ha_port_id,
                role,
                (vrrp_id, priority),
                now,
            )
            port = allocate_vip(session, VipRequest(subnet_id=vip_subnet_id), amp.id, now)
            amphora_repo.set_vrrp_port(session, amp.id, port.port_id, port.address)
            return PairMember(amp.id, role, priority, vrrp_id, port.address)

    def set_role(self, fence: Claim, amphora_id: str, role: str, priority: int) -> None:
        with self._fenced(fence) as session:
            amphora_repo.set_role(session, amphora_id, role, priority, _now())

    def record_vrrp_interface(self, fence: Claim, amphora_id: str, interface: str) -> None:
        with self._fenced(fence) as session:
            amphora_repo.set_vrrp_interface(session, amphora_id, interface)
