"""What the L4 engine balances: one load balancer's VIP, its L4 listeners and their members.

This is the engine's own input, free of the API and the database: a provider (or the
agent) builds an ``L4Service`` from the load-balancer graph, keeping only the members that
could get new flows (admin up, weight > 0) and marking those that health checks found
down (``healthy=False``). Backup members (``backup=True``) are balanced only while no
primary member is healthy, by a table of their own; members on the node's own host
(``local=True``, for a load balancer that prefers them) are balanced alone while one of
them is healthy. ``hash_key_for`` maps Octavia's algorithm and session persistence to
what the kernel hashes, refusing with a 400 what the engine cannot do.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum

from lbaas.errors import InvalidInput
from lbaas.l4.maglev import Backend, MaglevTable, build_table_with_down
from lbaas.model.enums import LbAlgorithm, PersistenceType

# Default table size: prime and over 100 x a pool of 160 members (Maglev's bound for shares
# within 1 %), while nft still loads it whole in well under a second; 65537 takes seconds.
# docs/architecture.md, "The L4 engine", has the measurements.
DEFAULT_TABLE_SIZE = 16411
# The lbaas algorithm name for a Maglev table keyed by the 5-tuple; Octavia has no such
# value, so a provider advertises it as a capability beside SOURCE_IP_PORT.
MAGLEV = LbAlgorithm.MAGLEV


class L4Protocol(StrEnum):
    TCP = "tcp"
    UDP = "udp"
    SCTP = "sctp"


class HashKey(StrEnum):
    """What the kernel hashes into the table to choose a slot."""

    FIVE_TUPLE = "five_tuple"
    SOURCE_ADDRESS = "source_address"


class LiveFlowPolicy(StrEnum):
    """What happens to the established flows of a member removed or found down (a pool's
    ``lbaas_member_down_policy``). CUT and REROUTE are one act, deleting the flows'
    conntrack entries, named for what follows: a TCP flow's next packet is balanced to
    another member, which answers it with a reset (cut); a UDP flow's next datagram is
    balanced to another member, which answers it (rerouted)."""

    KEEP = "keep"  # conntrack keeps them on the member until they end
    CUT = "cut"
    REROUTE = "reroute"


@dataclass(frozen=True)
class L4Member:
    key: str  # stable identity: the member id, or address:port
    address: str
    port: int
    weight: int = 1
    healthy: bool = True  # False: keeps its place in the table but gets no new flows
    backup: bool = False  # used only while no primary (non-backup) member is healthy
    # The Maglev key this member's permutation comes from: its own key unless the control
    # plane gave it a removed member's place (``Tombstone``). None: ``key``.
    place: str | None = None
    # On this node's host (a port bound there holds its address) and preferred: while one
    # such primary is healthy, the node balances only those.
    local: bool = False

    @property
    def place_key(self) -> str:
        return self.key if self.place is None else self.place

    @property
    def backend(self) -> Backend:
        return Backend(self.place_key, self.weight)


@dataclass(frozen=True)
class Tombstone:
    """A removed member's place, kept in the table so that removal moves only its slots.

    It walks its permutation and takes its turns like a member that is down, and its slots
    go where a down member's go (``build_table_with_down``); the control plane decides,
    the same for every node, when a tombstone is forgotten or reused by a new member.
    """

    place: str
    weight: int = 1
    backup: bool = False

    @property
    def backend(self) -> Backend:
        return Backend(self.place, self.weight)


@dataclass(frozen=True)
class L4Listener:
    protocol: L4Protocol
    port: int
    members: tuple[L4Member, ...]
    hash_key: HashKey = HashKey.FIVE_TUPLE
    table_size: int = DEFAULT_TABLE_SIZE
    # SOURCE_ADDRESS only: hash the source's first N bits (Octavia's persistence_granularity
    # as a prefix length), so a whole client subnet sticks to one member. None: all 32.
    source_prefix: int | None = None
    # Places of recently removed members (see ``Tombstone``): they own no slot.
    tombstones: tuple[Tombstone, ...] = ()
    # Octavia's allowed_cidrs: the only sources that may open a flow (empty: every source).
    allowed_cidrs: tuple[str, ...] = ()
    # What the established flows of a member that goes (or is taken) away do.
    live_flows: LiveFlowPolicy = LiveFlowPolicy.KEEP
    # The most flows the listener carries at once (Octavia's connection_limit, counted by
    # this kernel's conntrack); a new flow past it is dropped. None: no limit.
    connection_limit: int | None = None
    # Seconds a UDP flow may stay idle before the kernel forgets it (its conntrack entry's
    # timeout, in both directions): its next datagram is balanced anew, a member's late
    # answer is no longer forwarded. None: the kernel's own UDP timeouts.
    idle_timeout: int | None = None

    def __post_init__(self) -> None:
        if self.idle_timeout is not None and self.protocol is not L4Protocol.UDP:
            # Forgetting a TCP flow does not end it (conntrack picks it up mid-stream).
            raise ValueError("an idle timeout is for UDP listeners only")

    @property
    def name(self) -> str:
        """The listener's name inside its load balancer's nftables table (``tcp_80``)."""
        return f"{self.protocol.value}_{self.port}"

    def allowed_ipv4(self) -> tuple[str, ...]:
        """The IPv4 networks of ``allowed_cidrs``, overlaps merged (an nftables interval set
        refuses overlapping elements), in address order.

        The engine balances IPv4 only, so IPv6 networks can match none of its packets: a
        list of IPv6 networks only leaves this empty and admits no IPv4 source at all.
        """
        networks = [ipaddress.ip_network(cidr, strict=False) for cidr in self.allowed_cidrs]
        ipv4 = [n for n in networks if isinstance(n, ipaddress.IPv4Network)]
        return tuple(str(n) for n in ipaddress.collapse_addresses(ipv4))

    def shape(self) -> tuple[object, ...]:
        """What the rules depend on: a change here needs a full reload, not slot updates
        (a change of the allowed networks, not of whether there are some, is an update)."""
        healthy = any(m.healthy for m in self.members)
        filtered = bool(self.allowed_cidrs)
        limits = (self.connection_limit, self.idle_timeout)
        return (self.name, self.hash_key, self.table_size, healthy, self.source_prefix, filtered,
                limits)  # fmt: skip

    def active_members(self) -> tuple[L4Member, ...]:
        """The tier that balances: the primaries on this node's own host while one of them
        is healthy (``local``), else the primaries while one is healthy, else the backups
        (Octavia's backup members, as HAProxy's ``backup`` servers)."""
        local = tuple(m for m in self.members if m.local and not m.backup)
        if any(m.healthy for m in local):
            return local
        primaries = tuple(m for m in self.members if not m.backup)
        if any(m.healthy for m in primaries):
            return primaries
        backups = tuple(m for m in self.members if m.backup)
        return backups if any(m.healthy for m in backups) else primaries

    def table(self) -> MaglevTable:
        """The active tier's Maglev table: every member placed, the unhealthy ones replaced."""
        active = self.active_members()
        tier = active[0].backup if active else False
        graves = [t.backend for t in self.tombstones if t.backup == tier]
        down = {m.place_key for m in active if not m.healthy} | {b.key for b in graves}
        backends = [*(m.backend for m in active), *graves]
        return build_table_with_down(backends, self.table_size, down)


@dataclass(frozen=True)
class L4Service:
    """One load balancer as the engine sees it."""

    lb_id: str
    vip: str
    listeners: tuple[L4Listener, ...]
    # This namespace is where traffic with no source node enters: what it forwards to a
    # member is masqueraded, so the member's answer comes back through it.
    entry: bool = False

    def shape(self) -> tuple[object, ...]:
        return (self.vip, self.entry, tuple(listener.shape() for listener in self.listeners))


def hash_key_for(algorithm: str, persistence: PersistenceType | None) -> HashKey:
    """The hash for an Octavia algorithm and persistence; InvalidInput (400) otherwise.

    ``SOURCE_IP_PORT`` and ``MAGLEV`` hash the 5-tuple (conntrack keeps each flow on its
    member); ``SOURCE_IP`` as algorithm or persistence hashes the source address only, so
    one client always reaches the same member while the member set stands.
    """
    if persistence is not None and persistence is not PersistenceType.SOURCE_IP:
        raise InvalidInput(
            f"Session persistence {persistence} is not supported by the L4 engine; "
            "use SOURCE_IP or none."
        )
    if algorithm not in (LbAlgorithm.SOURCE_IP_PORT, LbAlgorithm.SOURCE_IP, MAGLEV):
        raise InvalidInput(
            f"LB algorithm {algorithm} is not supported by the L4 engine; "
            f"use SOURCE_IP_PORT, SOURCE_IP or {MAGLEV}."
        )
    if persistence is PersistenceType.SOURCE_IP or algorithm == LbAlgorithm.SOURCE_IP:
        return HashKey.SOURCE_ADDRESS
    return HashKey.FIVE_TUPLE
