"""The one interface through which the L4 engine changes the kernel.

Two implementations: ``real`` runs ``nft`` and ``conntrack`` (root; optionally inside a
network namespace) and ``recording`` only records what it was given, for unit tests.

Errors: ``lbaas.errors.InvalidRenderedConfig`` when ``nft -c`` refuses a ruleset,
``NftCommandFailed`` when a command cannot run or fails on a checked ruleset.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lbaas.errors import TemporaryError
from lbaas.l4.nft_steps import Step
from lbaas.l4.service import L4Protocol, L4Service


class NftCommandFailed(TemporaryError):
    """``nft`` or ``conntrack`` could not run, or failed on input ``nft -c`` accepted."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(
            "The kernel load balancer could not be programmed.",
            operator_message=f"{' '.join(argv)} exited {returncode}: {stderr.strip()}",
        )
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stderr = stderr


@dataclass(frozen=True)
class FlowMatch:
    """The NATed flows of one member behind one listener: what CUT deletes."""

    protocol: L4Protocol
    vip: str
    port: int
    member_address: str
    member_port: int


class VipHolder(abc.ABC):
    """The VIP as an address of the namespace, so that it answers ARP and ping there.

    Held on the entry node of a distributed load balancer only (``L4Service.entry``);
    holding also turns IPv4 forwarding on, which the entry's DNAT to other hosts needs.
    Both calls are idempotent. Raises NftCommandFailed when ``ip`` or ``sysctl`` fails.
    """

    @abc.abstractmethod
    def hold(self, vip: str) -> None: ...

    def hold_many(self, vips: Sequence[str]) -> None:
        """``hold`` of each of ``vips`` (an agent restoring its entry load balancers). Not
        abstract: this one holds them one by one."""
        for vip in vips:
            self.hold(vip)

    @abc.abstractmethod
    def release(self, vip: str) -> None: ...


class VipAnnouncer(abc.ABC):
    """The VIPs this node's BGP speaker announces to the tier's router (L4 tier nodes only).

    ``announce`` replaces the whole set (an empty set withdraws everything); idempotent.
    Raises ``lbaas.errors.TemporaryError`` when the speaker cannot be reconfigured.
    """

    @abc.abstractmethod
    def announce(self, vips: frozenset[str]) -> None: ...


class DsrRouter(abc.ABC):
    """Direct server return on an L4 tier node (``lbaas.tier.dsr``'s shape).

    ``apply`` replaces the node's whole DSR state with ``services``: a mark rule and a
    routing table per member address (the route via the member, which must be on-link),
    then the one nftables table that marks the VIPs' packets. Members no service names any
    more lose their rule and table after the table stopped marking for them. An empty
    sequence removes everything. Raises NftCommandFailed when ``ip`` or ``nft`` fails.
    """

    @abc.abstractmethod
    def apply(self, services: Sequence[L4Service]) -> None: ...


class NftOps(abc.ABC):
    """nftables transactions and conntrack entries, in one network namespace."""

    @abc.abstractmethod
    def check(self, ruleset: str) -> None:
        """``nft -c -f``: validate without changing anything.

        Raises InvalidRenderedConfig with nft's message, or NftCommandFailed.
        """

    @abc.abstractmethod
    def load(self, ruleset: str) -> None:
        """``nft -f``: apply ``ruleset`` as one transaction (all of it or none).

        Raises NftCommandFailed.
        """

    def load_steps(self, ruleset: str, steps: Sequence[Step]) -> None:
        """Apply ``ruleset``, whose whole effect ``steps`` also describe (``nft_steps``),
        as one transaction. An implementation that can send the steps without nftables'
        parser (and its reading of every chain and set) does, and loads ``ruleset`` when
        the kernel refuses them; this one loads ``ruleset``. Raises NftCommandFailed."""
        self.load(ruleset)

    @abc.abstractmethod
    def list_table(self, name: str) -> str | None:
        """``nft list table ip <name>``, or None if there is no such table. No change."""

    def has_table(self, name: str) -> bool:
        """Whether ``table ip <name>`` exists. No change. Not abstract: ``list_table``
        answers it, at the price of a listing."""
        return self.list_table(name) is not None

    @abc.abstractmethod
    def list_chain_json(self, table: str, chain: str) -> dict[str, Any] | None:
        """``nft -j list chain ip <table> <chain>`` parsed, or None if it does not exist."""

    @abc.abstractmethod
    def list_json(self, words: Sequence[str], *, terse: bool = False) -> dict[str, Any] | None:
        """``nft -j [-t] list <words>`` parsed (``-t``: without the elements of maps and
        sets), or None if ``nft`` refused (no such object). No change."""

    def rule_comments(self) -> dict[str, tuple[str, ...]] | None:
        """The comments of every rule of ``table ip lbaas``, by chain, in the chain's order
        (empty: no such table); None when this implementation cannot read them, and then a
        restarted engine loads every load balancer again. No change."""
        return None

    def table_names(self) -> list[str]:
        """The names of the namespace's ``ip`` tables. No change. Not abstract: from
        ``list_json`` (which nftables 1.0.6 answers only after reading every set's
        elements)."""
        listing = self.list_json(("tables",)) or {}
        return [
            str(item["table"].get("name", ""))
            for item in listing.get("nftables", [])
            if "table" in item and item["table"].get("family") == "ip"
        ]

    def slot_map(self, name: str) -> list[str | None] | None:
        """The slot map ``name`` of ``table ip lbaas``: each slot's ``address . port``
        (None: no element), as long as its largest slot + 1; None if there is no such map
        or this implementation cannot read it. No change."""
        return None

    def count_flows(self, protocol: L4Protocol, vip: str, port: int) -> int:
        """How many conntrack entries (live flows) go to ``vip``:``port``. No change.

        Not abstract: an implementation that cannot tell answers 0. Raises NftCommandFailed.
        """
        return 0

    @abc.abstractmethod
    def delete_flows(self, flows: FlowMatch) -> int:
        """Delete the conntrack entries of ``flows``; how many went. Idempotent.

        Raises NftCommandFailed.
        """
