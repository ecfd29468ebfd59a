"""The routing half of ``HostOps``: MTUs, per-leg routing tables, source rules, forwarding.

A real amphora answers on the interface a request came in on: each leg has its own routing
table (its subnet and, when the subnet has one, a default route via its gateway), and a
rule per address of the amphora (``from <VIP>``, ``from <member-leg address>``) selects the
table of the leg holding it. These calls set that up inside an amphora's namespace; like
the rest of ``HostOps`` they are idempotent and raise ``UnsupportedInMode`` (loopback) or
``HostCommandFailed``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

#: The rule priorities lbaas owns in an amphora namespace (the kernel's own are 0, 32766,
#: 32767): ``sync_source_rules`` removes rules in this range it was not asked for.
RULE_PRIORITY_FIRST = 1000
RULE_PRIORITY_LAST = 1999


@dataclass(frozen=True)
class Route:
    """One route of a table: ``destination`` (CIDR or ``default``) out of ``device``."""

    destination: str
    device: str
    gateway: str | None = None
    source: str | None = None  # the preferred source address (``src``)


@dataclass(frozen=True)
class SourceRule:
    """``ip rule add priority P from SOURCE lookup TABLE``."""

    priority: int
    source: str  # an address (a /32 or /128 rule)
    table: int


class RoutingOps(abc.ABC):
    """MTU, routes, rules and forwarding inside network namespaces."""

    @abc.abstractmethod
    def set_link_mtu(self, name: str, mtu: int, namespace: str | None = None) -> None:
        """Set link ``name``'s MTU. Idempotent. Raises UnsupportedInMode, HostCommandFailed."""

    @abc.abstractmethod
    def sync_routes(self, namespace: str, table: int | str, routes: Sequence[Route]) -> None:
        """Make ``table`` of ``namespace`` hold ``routes`` (``table`` a number or ``main``).

        Routes the kernel made itself (``proto kernel``: connected subnets, local
        addresses) are kept; every other route of the table not in ``routes`` is deleted.
        Idempotent.
        """

    @abc.abstractmethod
    def sync_source_rules(self, namespace: str, rules: Sequence[SourceRule]) -> None:
        """Make the rules of ``namespace`` with priorities in lbaas's range exactly ``rules``.

        Rules outside ``RULE_PRIORITY_FIRST``..``RULE_PRIORITY_LAST`` are left alone.
        Idempotent.
        """

    @abc.abstractmethod
    def set_forwarding(self, namespace: str, enabled: bool) -> None:
        """Turn IPv4 forwarding of ``namespace`` on or off (the L4 engine's DNAT needs it)."""
