"""The tier's leases on a coordination engine (issue 29.2): over the network, not a file.

A tier node ``hN`` holds the lease ``tier/hN`` on the engine ``[coordination]`` names
(PostgreSQL or etcd; ``lbaas.coordination``), renewing it every
``tier.lease_renew_interval`` with a TTL of ``LeasePolicy.lifetime`` (interval × missed
renewals: TLB's 500 ms is, say, 0.125 × 4). The engine's clock decides expiry, so there
is nothing left to compare between hosts' clocks.

``CoordinatedWatcher`` is the control plane's side: a node whose lease the engine no longer
lists is marked down at once (the node has fenced itself by then: ``node_lease``), with no
health-port check, since the double check of the SQLite store guarded against an outage of
the store looking like every lease expiring, and an engine that cannot be asked says so
(``CoordinationUnavailable``): then nothing is marked down or restored until it answers.
So a node that stops renewing is marked down at most one lease plus one sweep (half a
renewal interval) after its last granted renewal, BFD or not. A node whose lease is listed
again is restored.

``CoordinatedLeaseReader`` gives ``lbaas tier status`` and the metrics each node's lease
age in the SQLite store's shape (seconds since its last renewal, as the engine's remaining
time implies it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lbaas.coordination.base import CoordinationUnavailable, Coordinator
from lbaas.tier.lease_store import LeaseStoreUnavailable
from lbaas.tier.watcher import SweepReport

PREFIX = "tier/"
Action = Callable[[str], None]


def node_lease(node: str) -> str:
    return PREFIX + node


def _live_nodes(coordinator: Coordinator) -> dict[str, float]:
    """Node -> seconds its lease has left, for the leases held by the node they name."""
    return {
        lease.holder: lease.remaining
        for lease in coordinator.live(PREFIX)
        if lease.name == node_lease(lease.holder)
    }


@dataclass
class CoordinatedWatcher:
    coordinator: Coordinator
    nodes: tuple[str, ...]
    withdraw: Action
    restore: Action
    _down: set[str] = field(default_factory=set)

    def is_down(self, node: str) -> bool:
        return node in self._down

    def sweep(self) -> SweepReport:
        try:
            live = _live_nodes(self.coordinator)
        except CoordinationUnavailable:
            return SweepReport(False, frozenset(), frozenset(), frozenset())
        restored = frozenset(node for node in self._down if node in live)
        newly_down = frozenset(
            node for node in self.nodes if node not in live and node not in self._down
        )
        self._down = (self._down - restored) | newly_down
        for node in sorted(restored):
            self.restore(node)
        for node in sorted(newly_down):
            self.withdraw(node)
        return SweepReport(True, newly_down, restored, frozenset())


class CoordinatedLeaseReader:
    """``read()`` as ``SqliteLeaseStore.read`` answers it: node -> wall time of its last
    renewal (now - (ttl - remaining)), for status and metrics only."""

    def __init__(self, coordinator: Coordinator, ttl: float) -> None:
        self._coordinator = coordinator
        self._ttl = ttl

    def read(self) -> dict[str, float]:
        try:
            live = _live_nodes(self._coordinator)
        except CoordinationUnavailable as exc:
            raise LeaseStoreUnavailable(str(exc)) from exc
        now = time.time()
        return {node: now - max(0.0, self._ttl - left) for node, left in live.items()}
