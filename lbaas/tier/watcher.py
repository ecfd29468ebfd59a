"""The control plane's side of the leases: read renewals, sweep, withdraw the nodes found down.

Each ``sweep`` reads the store and records a renewal for every node whose stored time moved
on since the last read, then lets ``LeaseTable.sweep`` apply TLB's double check (expired
lease *and* failed health port). A store that cannot be read records no renewals: leases
expire, the health ports still answer, and nothing is withdrawn. A node marked down is
withdrawn through ``withdraw`` (in the lab: the router's BGP session with it is disabled, so
its routes go even when the node itself can no longer act); a node that renews again is
restored through ``restore``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lbaas.tier.lease import HealthCheck, LeaseTable
from lbaas.tier.lease_store import LeaseStoreUnavailable, SqliteLeaseStore

Action = Callable[[str], None]


@dataclass(frozen=True)
class SweepReport:
    store_available: bool
    withdrawn: frozenset[str]
    restored: frozenset[str]
    suspect_but_healthy: frozenset[str]


@dataclass
class LeaseWatcher:
    table: LeaseTable
    store: SqliteLeaseStore
    health: HealthCheck
    withdraw: Action
    restore: Action
    _seen: dict[str, float] = field(default_factory=dict)

    def _read_renewals(self) -> tuple[bool, set[str]]:
        try:
            stored = self.store.read()
        except LeaseStoreUnavailable:
            return False, set()
        restored = set()
        for node, renewed in stored.items():
            if node in set(self.table.nodes) and renewed != self._seen.get(node):
                self._seen[node] = renewed
                if self.table.renew(node):
                    restored.add(node)
        return True, restored

    def sweep(self) -> SweepReport:
        available, restored = self._read_renewals()
        for node in sorted(restored):
            self.restore(node)
        result = self.table.sweep(self.health)
        for node in sorted(result.newly_down):
            self.withdraw(node)
        return SweepReport(
            available, result.newly_down, frozenset(restored), result.suspect_but_healthy
        )
