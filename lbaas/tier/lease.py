"""Node leases of the L4 tier, with TLB's double check before a node is taken out.

Every node renews its lease every ``renew_interval`` seconds. A node whose lease has gone
``missed_renewals`` intervals without renewal is only *suspect*: it is marked down, and its
announcements are to be withdrawn, when a check of its health port fails as well. So an
outage of the lease store alone, which makes every lease look expired at once, withdraws
nothing while the nodes still answer on their health port. A node marked down comes back
with its next renewal.

Pure: the clock and the health check are passed in (a fake clock in the unit tests). Who
renews (the node's agent), where leases are stored and who withdraws (the node itself, or
the control plane through the router) are later steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from lbaas.config import TierSettings

Clock = Callable[[], float]  # seconds, monotonic
HealthCheck = Callable[[str], bool]  # True when the node's health port answers


_DEFAULTS = TierSettings()  # one source for the defaults: the documented settings


@dataclass(frozen=True)
class LeasePolicy:
    renew_interval: float = _DEFAULTS.lease_renew_interval
    missed_renewals: int = _DEFAULTS.lease_missed_renewals
    health_tries: int = _DEFAULTS.health_check_tries
    health_timeout: float = _DEFAULTS.health_check_timeout

    def __post_init__(self) -> None:
        if self.renew_interval <= 0 or self.missed_renewals < 1:
            raise ValueError(f"bad lease policy: {self}")
        if self.health_tries < 1 or self.health_timeout <= 0:
            raise ValueError(f"bad lease policy: {self}")

    @classmethod
    def from_settings(cls, tier: TierSettings) -> LeasePolicy:
        return cls(
            tier.lease_renew_interval,
            tier.lease_missed_renewals,
            tier.health_check_tries,
            tier.health_check_timeout,
        )

    @property
    def lifetime(self) -> float:
        """How long a lease holds after its last renewal."""
        return self.renew_interval * self.missed_renewals


@dataclass(frozen=True)
class SweepResult:
    newly_down: frozenset[str]  # withdraw these nodes' announcements now
    suspect_but_healthy: frozenset[str]  # lease expired, health port answers: kept


@dataclass
class LeaseTable:
    policy: LeasePolicy
    clock: Clock
    _renewed: dict[str, float] = field(default_factory=dict)
    _down: set[str] = field(default_factory=set)

    def join(self, node: str) -> None:
        """A new node counts as just renewed, so it has a full lifetime to renew."""
        self._renewed.setdefault(node, self.clock())

    def leave(self, node: str) -> None:
        self._renewed.pop(node, None)
        self._down.discard(node)

    def renew(self, node: str) -> bool:
        """Record a renewal; True when it brings a node marked down back up."""
        self._renewed[node] = self.clock()
        came_back = node in self._down
        self._down.discard(node)
        return came_back

    def expired(self, node: str) -> bool:
        renewed = self._renewed.get(node)
        return renewed is None or self.clock() - renewed > self.policy.lifetime

    def is_down(self, node: str) -> bool:
        return node in self._down

    @property
    def nodes(self) -> Iterable[str]:
        return sorted(self._renewed)

    def sweep(self, health_port_answers: HealthCheck) -> SweepResult:
        """Mark down every node whose lease expired and whose health port does not answer.

        The health port is checked only for expired leases not yet marked down, so a sweep
        of a healthy tier costs no checks at all.
        """
        newly_down: set[str] = set()
        kept: set[str] = set()
        for node in self.nodes:
            if node in self._down or not self.expired(node):
                continue
            if health_port_answers(node):
                kept.add(node)
            else:
                newly_down.add(node)
        self._down |= newly_down
        return SweepResult(frozenset(newly_down), frozenset(kept))
