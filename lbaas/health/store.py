"""What the health manager needs from persistence, and nothing more.

The receiver, the roll-up and the stale-amphora sweeper hold the health *policy*; where
heartbeats, counters and statuses live is someone else's business. This interface is the
seam: an SQL implementation for production, ``InMemoryHealthStore`` for tests. Keeping
the policy here (and not in repository queries, as Octavia does with its failover
threshold) is what lets it be unit-tested with a fake clock and no database.

Times are wall-clock seconds (``time.time()``), because several health-manager processes
may share one database. Methods may be called from the receiver thread and the sweeper
thread at once; implementations must be thread-safe. Errors of the backing store are
raised as they are: the receiver and the sweeper catch everything at the top of their
loops, log and count it, and carry on with the next heartbeat or sweep.

A store may buffer liveness and counters and write them every flush interval (the SQL
store does, see ``lbaas.health.sql_store``); ``flush`` writes what is buffered, and the
health manager calls it from a thread of its own (``lbaas.health.flusher``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lbaas.health.counters import CounterRecord
from lbaas.health.freshness import HeartbeatStamp
from lbaas.health.rollup import OperatingStatuses
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancer, LoadBalancerId

CounterUpdate = Callable[[Mapping[ListenerId, CounterRecord]], Mapping[ListenerId, CounterRecord]]
"""Given one amphora's stored counter records, the records to store in their place."""


@dataclass(frozen=True)
class AmphoraHeartbeat:
    """When an amphora that should be heartbeating was last heard from."""

    amphora_id: AmphoraId
    loadbalancer_id: LoadBalancerId
    last_seen: float
    host: str | None = None
    """The agent host it runs on (``compute_id``); None where no fleet is recorded."""
    address: str | None = None
    """Its own (VRRP) address, where a pair's amphora answers for itself alone
    (``lbaas.health.pair_probe``); None where it has none recorded."""


class HealthStore(abc.ABC):
    """Persistence for heartbeats, listener counters, operating statuses and failovers."""

    @abc.abstractmethod
    def record_heartbeat(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        received_at: float,
        stamp: HeartbeatStamp | None = None,
    ) -> bool:
        """Note that ``amphora_id`` was heard from at ``received_at``.

        Returns False, changing nothing, when the amphora is unknown, deleted, or not
        serving ``loadbalancer_id``: such a heartbeat (a forgotten agent, a stale
        configuration) is ignored entirely. Idempotent; a ``received_at`` older than the
        stored one must not move ``last_seen`` back. May be stored at the next ``flush``.
        A ``stamp`` not newer than the newest one accepted from the amphora by any
        health manager does not count as liveness (``lbaas.health.freshness``).
        """

    @abc.abstractmethod
    def load_graph(self, loadbalancer_id: LoadBalancerId) -> LoadBalancer | None:
        """The desired graph of a load balancer, or None if it no longer exists.

        The same graph converge builds: objects being deleted are left out. Read-only.
        May be one read earlier, as long as ``apply_operating_statuses`` then refuses to
        write statuses computed from it once the stored graph has changed.
        """

    def refresh_graphs(self, loadbalancer_ids: list[LoadBalancerId]) -> None:  # noqa: B027
        """Make the next ``load_graph`` of these load balancers return the stored graph if it
        changed since it was read. A store that keeps no copies has nothing to do; a
        caching one must, for load balancers no heartbeat revalidates (the distributed
        provider's, which the status poll reads)."""

    @abc.abstractmethod
    def update_listener_counters(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        update: CounterUpdate,
        stamp: HeartbeatStamp | None = None,
    ) -> None:
        """Read-modify-write one amphora's listener counter records, atomically.

        Reads the records stored for ``amphora_id`` (keyed by listener), calls ``update``
        once with them and stores what it returns, inserting or replacing per listener;
        records ``update`` leaves out stay as they are. The read and the write must be one
        transaction holding the rows (``SELECT ... FOR UPDATE``) so two health managers
        cannot lose each other's counts. Records outlive their amphora (a failed-over
        amphora's bytes still count); they go with their listener. May be deferred to the
        next ``flush``, where the updates of one amphora are applied in the order given.
        An update whose ``stamp`` is not newer than the newest accepted one is dropped.
        """

    @abc.abstractmethod
    def apply_operating_statuses(
        self,
        loadbalancer_id: LoadBalancerId,
        statuses: OperatingStatuses,
        heard_from: tuple[AmphoraId, HeartbeatStamp] | None = None,
    ) -> bool:
        """Write ``statuses`` to the objects under a load balancer, in one transaction.

        Returns False, writing nothing, if the load balancer is gone or is PENDING_*, or
        if ``heard_from`` names a heartbeat older than the newest accepted from that
        amphora (checked in the same transaction): a converge in flight sets statuses itself when
        it finishes, and the data plane may legitimately lag its graph until then. Ids
        that no longer exist are skipped. Idempotent. A store that knows these statuses
        are already stored may skip the write and return True.
        """

    def flush(self) -> None:  # noqa: B027 - a store that buffers nothing has nothing to do
        """Write whatever liveness and counters are buffered (nothing, by default)."""

    @abc.abstractmethod
    def list_amphora_heartbeats(self) -> list[AmphoraHeartbeat]:
        """Every amphora expected to heartbeat, with the time it was last heard from.

        That is every amphora serving a load balancer that has sent at least one
        heartbeat, including those with a failover already pending; amphorae still being
        built, or already deleted, are left out. A store that knows which amphorae serve
        (the SQL one) also lists those never heard from, as last seen when they were put
        into service: silence from the start is silence too.
        """

    @abc.abstractmethod
    def request_failover(self, amphora_id: AmphoraId) -> bool:
        """Mark the amphora as failing over and enqueue the failover job, atomically.

        Returns True if this call requested it; False if a failover was already pending
        (or the amphora is gone), so that repeating the request is harmless and a sweep
        that sees the same stale amphora again does not queue a second job.
        """
