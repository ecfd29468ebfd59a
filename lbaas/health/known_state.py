"""What one health-manager process knows of the stored state, so heartbeats compare in memory.

Loading a load balancer's graph for every heartbeat, and writing its statuses every time,
was most of a heartbeat's cost. This is the memory that replaces it, per process:

* amphorae: which load balancer each one serves (or that it is unknown, for a short while,
  so that a forgotten agent does not cost a query per datagram);
* load balancers: the graph last loaded, the *version* it was loaded at (provisioning
  status and converge generation, read before the graph), and the operating statuses this
  process last wrote for it.

Entries are only ever dropped, never patched: the SQL store asks the database for the
versions of every load balancer heard from in a flush interval and drops those that moved
(``revalidate``), and drops one whose status write was refused. Load balancers no
heartbeat names (the distributed provider's) are revalidated by the status poll, which
asks for their versions every round (``HealthStore.refresh_graphs``). A graph newer than its
version only causes an extra reload. The statuses written are trusted for
``status_refresh`` seconds, after which they are written again (idempotently), so what
another process or a converge wrote in between is corrected within that time.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from lbaas.health.rollup import OperatingStatuses
from lbaas.model.enums import ProvisioningStatus
from lbaas.model.graph import AmphoraId, LoadBalancer, LoadBalancerId

Version = tuple[str, int]
"""(provisioning status, converge generation requested) of a load balancer."""


@dataclass
class KnownLoadBalancer:
    """One load balancer as this process last read and wrote it."""

    graph: LoadBalancer
    version: Version
    written: OperatingStatuses | None = None
    written_at: float = 0.0

    @property
    def converging(self) -> bool:
        """Whether it was PENDING_* when read: statuses must not be written."""
        return ProvisioningStatus(self.version[0]).is_pending


@dataclass(frozen=True)
class AmphoraLookup:
    """The answer of the amphora cache: ``cached`` False means ask the database."""

    cached: bool
    loadbalancer_id: LoadBalancerId | None = None


_NOT_CACHED = AmphoraLookup(cached=False)


class KnownState:
    """Thread-safe caches of amphora assignments and load balancers (see module doc)."""

    def __init__(self, status_refresh: float = 30.0, unknown_ttl: float = 1.0) -> None:
        self._lock = threading.Lock()
        self._status_refresh = status_refresh
        self._unknown_ttl = unknown_ttl
        self._amphorae: dict[AmphoraId, LoadBalancerId] = {}
        self._unknown_until: dict[AmphoraId, float] = {}
        self._loadbalancers: dict[LoadBalancerId, KnownLoadBalancer] = {}

    def amphora(self, amphora_id: AmphoraId, now: float) -> AmphoraLookup:
        with self._lock:
            lb_id = self._amphorae.get(amphora_id)
            if lb_id is not None:
                return AmphoraLookup(cached=True, loadbalancer_id=lb_id)
            until = self._unknown_until.get(amphora_id)
            if until is not None and now < until:
                return AmphoraLookup(cached=True)
            return _NOT_CACHED

    def remember_amphorae(
        self,
        asked: Collection[AmphoraId],
        assignments: Mapping[AmphoraId, LoadBalancerId],
        now: float,
    ) -> None:
        """What the database said of ``asked``: served load balancers, the rest unknown."""
        with self._lock:
            for amphora_id in asked:
                lb_id = assignments.get(amphora_id)
                if lb_id is None:
                    self._amphorae.pop(amphora_id, None)
                    self._unknown_until[amphora_id] = now + self._unknown_ttl
                else:
                    self._amphorae[amphora_id] = lb_id
                    self._unknown_until.pop(amphora_id, None)

    def loadbalancer(self, loadbalancer_id: LoadBalancerId) -> KnownLoadBalancer | None:
        with self._lock:
            return self._loadbalancers.get(loadbalancer_id)

    def remember_graph(self, graph: LoadBalancer, version: Version) -> KnownLoadBalancer:
        known = KnownLoadBalancer(graph=graph, version=version)
        with self._lock:
            self._loadbalancers[graph.id] = known
        return known

    def forget(self, loadbalancer_id: LoadBalancerId) -> None:
        with self._lock:
            self._loadbalancers.pop(loadbalancer_id, None)

    def revalidate(
        self, asked: Collection[LoadBalancerId], versions: Mapping[LoadBalancerId, Version]
    ) -> None:
        """Drop every load balancer of ``asked`` whose stored version is not the known one."""
        with self._lock:
            for lb_id in asked:
                known = self._loadbalancers.get(lb_id)
                if known is not None and versions.get(lb_id) != known.version:
                    del self._loadbalancers[lb_id]

    def written(self, known: KnownLoadBalancer, now: float) -> OperatingStatuses | None:
        """The statuses last written for ``known``, if still to be trusted at ``now``."""
        with self._lock:
            if known.written is None or now - known.written_at > self._status_refresh:
                return None
            return known.written

    def remember_written(
        self, known: KnownLoadBalancer, statuses: OperatingStatuses, now: float
    ) -> None:
        with self._lock:
            known.written = statuses
            known.written_at = now
