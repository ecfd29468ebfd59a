"""An in-memory ``HealthStore``: the fake the health manager's tests run against.

It keeps the contract of ``lbaas.health.store`` (unknown amphorae ignored, no status
writes while a load balancer is PENDING_*, one pending failover per amphora) so that tests
exercise the same behaviour the SQL store must have, and it records what it was asked to
do so tests can assert on it. Besides the interface it has a few methods for setting the
scene (``add_amphora``, ``put_graph``, ``set_pending``, ``finish_failover``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from lbaas.health.counters import CounterRecord
from lbaas.health.freshness import HeartbeatStamp, newer, not_older
from lbaas.health.rollup import OperatingStatuses
from lbaas.health.store import AmphoraHeartbeat, CounterUpdate, HealthStore
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancer, LoadBalancerId


class InMemoryHealthStore(HealthStore):
    """Thread-safe dictionaries behind the ``HealthStore`` interface."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._amphora_lb: dict[AmphoraId, LoadBalancerId] = {}
        self._hosts: dict[AmphoraId, str | None] = {}
        self._addresses: dict[AmphoraId, str | None] = {}
        self._last_seen: dict[AmphoraId, float] = {}
        self._graphs: dict[LoadBalancerId, LoadBalancer] = {}
        self._pending: set[LoadBalancerId] = set()
        self._counters: dict[tuple[AmphoraId, ListenerId], CounterRecord] = {}
        self._statuses: dict[LoadBalancerId, OperatingStatuses] = {}
        self._failover_pending: set[AmphoraId] = set()
        self._failover_requests: list[AmphoraId] = []
        self._accepted: dict[AmphoraId, HeartbeatStamp] = {}

    # Setting the scene.

    def add_amphora(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        last_seen: float | None = None,
        host: str | None = None,
        address: str | None = None,
    ) -> None:
        """Register an amphora serving a load balancer, optionally already heard from;
        ``address``: its own (VRRP) address."""
        with self._lock:
            self._amphora_lb[amphora_id] = loadbalancer_id
            self._hosts[amphora_id] = host
            self._addresses[amphora_id] = address
            if last_seen is not None:
                self._last_seen[amphora_id] = last_seen

    def put_graph(self, graph: LoadBalancer) -> None:
        with self._lock:
            self._graphs[graph.id] = graph

    def set_pending(self, loadbalancer_id: LoadBalancerId, pending: bool = True) -> None:
        """Mark a load balancer as being converged (PENDING_*) or not."""
        with self._lock:
            if pending:
                self._pending.add(loadbalancer_id)
            else:
                self._pending.discard(loadbalancer_id)

    def finish_failover(self, amphora_id: AmphoraId) -> None:
        """The failover job ran: the amphora may be failed over again later."""
        with self._lock:
            self._failover_pending.discard(amphora_id)

    # What tests look at.

    def failover_requests(self) -> list[AmphoraId]:
        """Every failover this store accepted, in order."""
        with self._lock:
            return list(self._failover_requests)

    def last_seen(self, amphora_id: AmphoraId) -> float | None:
        with self._lock:
            return self._last_seen.get(amphora_id)

    def statuses(self, loadbalancer_id: LoadBalancerId) -> OperatingStatuses | None:
        """The operating statuses last written for a load balancer."""
        with self._lock:
            return self._statuses.get(loadbalancer_id)

    def counter_records(self, amphora_id: AmphoraId) -> dict[ListenerId, CounterRecord]:
        with self._lock:
            return self._records_of(amphora_id)

    def all_counter_records(self, listener_id: ListenerId) -> list[CounterRecord]:
        """The records of every amphora that ever served a listener."""
        with self._lock:
            return [r for (_, lid), r in self._counters.items() if lid == listener_id]

    # HealthStore.

    def record_heartbeat(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        received_at: float,
        stamp: HeartbeatStamp | None = None,
    ) -> bool:
        with self._lock:
            if self._amphora_lb.get(amphora_id) != loadbalancer_id:
                return False
            if not newer(stamp, self._accepted.get(amphora_id)):
                return True  # known, but a replay: no liveness
            if stamp is not None:
                self._accepted[amphora_id] = stamp
            previous = self._last_seen.get(amphora_id, received_at)
            self._last_seen[amphora_id] = max(previous, received_at)
            return True

    def load_graph(self, loadbalancer_id: LoadBalancerId) -> LoadBalancer | None:
        with self._lock:
            return self._graphs.get(loadbalancer_id)

    def update_listener_counters(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        update: CounterUpdate,
        stamp: HeartbeatStamp | None = None,
    ) -> None:
        # record_heartbeat came first and accepted a fresh stamp: equal is this heartbeat.
        with self._lock:
            if not not_older(stamp, self._accepted.get(amphora_id)):
                return
            updated: Mapping[ListenerId, CounterRecord] = update(self._records_of(amphora_id))
            for listener_id, record in updated.items():
                self._counters[(amphora_id, listener_id)] = record

    def apply_operating_statuses(
        self,
        loadbalancer_id: LoadBalancerId,
        statuses: OperatingStatuses,
        heard_from: tuple[AmphoraId, HeartbeatStamp] | None = None,
    ) -> bool:
        with self._lock:
            if loadbalancer_id not in self._graphs or loadbalancer_id in self._pending:
                return False
            if heard_from is not None and not not_older(
                heard_from[1], self._accepted.get(heard_from[0])
            ):
                return False
            self._statuses[loadbalancer_id] = statuses
            return True

    def list_amphora_heartbeats(self) -> list[AmphoraHeartbeat]:
        with self._lock:
            return [
                AmphoraHeartbeat(aid, lb_id, seen, self._hosts.get(aid), self._addresses.get(aid))
                for aid, lb_id in self._amphora_lb.items()
                if (seen := self._last_seen.get(aid)) is not None
            ]

    def request_failover(self, amphora_id: AmphoraId) -> bool:
        with self._lock:
            if amphora_id not in self._amphora_lb or amphora_id in self._failover_pending:
                return False
            self._failover_pending.add(amphora_id)
            self._failover_requests.append(amphora_id)
            return True

    def _records_of(self, amphora_id: AmphoraId) -> dict[ListenerId, CounterRecord]:
        return {lid: r for (aid, lid), r in self._counters.items() if aid == amphora_id}
