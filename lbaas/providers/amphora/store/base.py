"""``AmphoraStore``: every database write the amphora provider makes, behind one interface.

The provider allocates what would leak if forgotten — amphora records and the ports an
amphora takes on member networks — and retires them. Each of those writes is one method
here, one transaction in the database form (``database``), and each is fenced: it takes
the converge job's ``Claim`` and, in the same transaction, writes only if the claim still
holds its lease, raising ``LeaseLost`` otherwise with nothing written. Reads are not fenced.
Unit tests pass an in-memory store to the provider instead of a database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lbaas.model.enums import HostStatus
from lbaas.model.fleet import HostAddress

if TYPE_CHECKING:
    from lbaas.db.jobs.job_queue import Claim


@dataclass(frozen=True)
class AmphoraChoice:
    """The amphora a converge works on, and the amphorae it replaces (failover)."""

    amphora_id: str
    retiring: tuple[str, ...] = ()
    host: HostAddress | None = None
    """The agent host of ``amphora_id``; None: the single configured agent (no fleet)."""


@dataclass(frozen=True)
class AgentLocation:
    """Where an existing amphora's agent is, and whether its host is UP."""

    host: HostAddress
    status: HostStatus
    heard_at: float | None = None
    """When its host's last heartbeat was accepted (epoch seconds); None: never."""


class AmphoraStore(Protocol):
    """The amphora provider's allocations; writing methods are fenced by the job's claim."""

    def live_amphorae(self, loadbalancer_id: str) -> list[str]:
        """Ids of the load balancer's amphorae not deleted nor being deleted, oldest first."""
        ...

    def choose_amphora(
        self,
        fence: Claim,
        *,
        zone: str | None,
        vip_address: str,
        rebuild: bool,
        legacy_host: str,
    ) -> AmphoraChoice:
        """The amphora of ``fence.loadbalancer_id`` to converge, created if it has none.

        With ``rebuild`` every live amphora is retiring and a new one is created. A new
        amphora is PENDING_CREATE on the least-loaded live host of ``zone`` (any zone if
        None; on a rebuild, off the retiring amphorae's hosts when another can take it),
        or on ``legacy_host`` when no host is enrolled at all. Raises ``LeaseLost``
        before writing anything, ``NoHostAvailable`` when no live host has room.
        """
        ...

    def agent_of(self, amphora_id: str) -> AgentLocation | None:
        """The host of an amphora; None when it has none (the single configured agent)."""
        ...

    def compute_zone(self, availability_zone: str | None) -> str | None:
        """The ``compute_zone`` of the named availability zone's profile, if it has one."""
        ...

    def member_addresses(
        self, fence: Claim, amphora_id: str, subnet_ids: Sequence[str]
    ) -> dict[str, str]:
        """The amphora's address on each subnet, allocating a port where it has none.

        Raises ``LeaseLost`` before writing anything.
        """
        ...

    def retire(self, fence: Claim, amphora_id: str) -> None:
        """Mark the amphora DELETED and free its ports. Raises ``LeaseLost``."""
        ...

    def mark_serving(self, fence: Claim, amphora_id: str) -> None:
        """Record that the amphora's agent accepted its spec. Raises ``LeaseLost``."""
        ...


@dataclass(frozen=True)
class PairMember:
    """One amphora of an ACTIVE_STANDBY pair as the provider needs it."""

    amphora_id: str
    role: str  # AmphoraRole: MASTER or BACKUP
    priority: int
    vrrp_id: int
    vrrp_address: str
    failover_pending: bool = False
    host: HostAddress | None = None
    """The member's agent host; None: the single configured agent (no fleet)."""


@dataclass(frozen=True)
class PairSite:
    """Where a pair's members may go: the zone's live hosts, two distinct ones.

    ``single_host`` is the host id of ``lbaas serve``'s own agent: when it is the only
    host enrolled (the embedded one-host mode) both members go on it, as a pair in two
    namespaces of one machine; ``legacy_host`` is the agent used when no host is
    enrolled at all.
    """

    zone: str | None
    legacy_host: str
    single_host: str


@runtime_checkable
class PairStore(Protocol):
    """The ACTIVE_STANDBY allocations: pair members with their VRRP ports and roles.

    Apart from ``AmphoraStore`` so that SINGLE needs none of it; the database form
    implements both. Writing methods are fenced like ``AmphoraStore``'s.
    """

    def pair_members(self, loadbalancer_id: str) -> list[PairMember]:
        """The load balancer's live amphorae with their VRRP facts, oldest first."""
        ...

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
        """A new PENDING_CREATE amphora with a VRRP port on the VIP subnet.

        Placed in the same transaction on a live host of ``site`` that is none of
        ``pair_hosts`` (the other members' hosts) and off ``avoid`` when possible
        (``placement.place_pair_member``). Raises ``LeaseLost`` before writing anything,
        ``PairPlacementImpossible`` when no such host has room.
        """
        ...

    def set_role(self, fence: Claim, amphora_id: str, role: str, priority: int) -> None:
        """Record the amphora's role and VRRP priority. Raises ``LeaseLost``."""
        ...

    def last_peer_address(self, loadbalancer_id: str, survivor: str) -> str | None:
        """The VRRP address of the pair member retired last (not ``survivor``), if any:
        the peer a lone survivor keeps in its configuration until a new one joins."""
        ...

    def record_vrrp_interface(self, fence: Claim, amphora_id: str, interface: str) -> None:
        """Record the link the agent runs VRRP on. Raises ``LeaseLost``."""
        ...
