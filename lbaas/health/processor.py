"""What one authenticated heartbeat changes: liveness, counters, operating statuses.

The receiver only proves a datagram is genuine and fresh; this is the step after it, kept
apart so it can be driven directly in tests and reused by anything else that learns of a
data plane's health (a provider's ``status`` answer takes the same path). Order matters:
liveness first, because a heartbeat that reaches us proves the amphora is up even if its
load balancer is in the middle of a converge; counters next, because they are cumulative
and must be folded even while statuses may not be written; statuses last, written by the
store only when no converge is in flight.

The roll-up is a pure function of the graph and the states a report carries (not its
counters, which move every time), so its last result per load balancer is kept and
reused while neither changed: in the steady state a heartbeat computes nothing, and the
store recognises the very statuses it last wrote.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import partial

from lbaas.health.counters import fold_report
from lbaas.health.freshness import HeartbeatStamp
from lbaas.health.rollup import OperatingStatuses, roll_up
from lbaas.health.store import HealthStore
from lbaas.model.graph import (
    AmphoraId,
    ListenerId,
    LoadBalancer,
    LoadBalancerId,
    MemberId,
    PoolId,
)
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolState,
)

log = logging.getLogger(__name__)


class HeartbeatOutcome(StrEnum):
    """What became of a heartbeat that passed authentication."""

    APPLIED = "applied"
    """Recorded, counters folded, statuses written."""
    DEFERRED = "deferred"
    """Recorded and counters folded; statuses not written (a converge is in flight)."""
    LOADBALANCER_GONE = "loadbalancer_gone"
    """Recorded; the load balancer no longer exists, so there was nothing else to do."""
    UNKNOWN_AMPHORA = "unknown_amphora"
    """Ignored: the store does not know this amphora as serving that load balancer."""


def _with_probe(health: ListenerHealth) -> ListenerCounters:
    """The counters with the VIP probe's result as gauges: kept like the counters, per
    (amphora, listener), so ``/metrics`` reads it from the same records."""
    if health.vip_up is None:
        return health.counters
    return replace(health.counters, vip_probes=1, vip_answered=int(health.vip_up))


def _reported_counters(
    graph: LoadBalancer, report: HealthReport
) -> dict[ListenerId, ListenerCounters]:
    """The counters to fold, per object id: listeners, and pools and members where the
    agent sent theirs. Their records share one table keyed by object id (ids are UUIDs,
    distinct across kinds; every reader selects by the ids of the kind it shows). Only
    objects the graph knows: a late report must not resurrect the counters of one that
    was just deleted."""
    known = {listener.id for listener in graph.listeners}
    reported: dict[ListenerId, ListenerCounters] = {
        lid: _with_probe(health) for lid, health in report.listeners.items() if lid in known
    }
    for pool in graph.pools:
        health = report.pools.get(pool.id)
        if health is None or health.counters is None:
            continue
        reported[ListenerId(pool.id)] = health.counters
        for member in pool.members:
            counted = health.member_counters.get(member.id)
            if counted is not None:
                reported[ListenerId(member.id)] = counted
    return reported


def _states(report: HealthReport) -> dict[PoolId, tuple[PoolState, Mapping[MemberId, MemberState]]]:
    """What the roll-up reads of the pools: their states, not their moving counters."""
    return {pid: (health.state, health.members) for pid, health in report.pools.items()}


@dataclass(frozen=True)
class _RolledUp:
    """One roll-up and what it was computed from."""

    graph: LoadBalancer
    listeners: Mapping[ListenerId, ListenerState]
    pools: Mapping[PoolId, tuple[PoolState, Mapping[MemberId, MemberState]]]
    statuses: OperatingStatuses


class HeartbeatProcessor:
    """Applies authenticated heartbeats to a ``HealthStore``."""

    def __init__(self, store: HealthStore, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock
        self._rolled_up: dict[LoadBalancerId, _RolledUp] = {}

    def process(
        self,
        amphora_id: AmphoraId,
        epoch: int,
        report: HealthReport,
        sequence: int | None = None,
    ) -> HeartbeatOutcome:
        """Apply one heartbeat from ``amphora_id``'s agent of start-up time ``epoch``.

        ``sequence`` is the datagram's: with it, the store refuses the heartbeat if any
        health manager already accepted a newer one (``lbaas.health.freshness``).
        """
        lb_id = report.loadbalancer_id
        stamp = None if sequence is None else HeartbeatStamp(epoch, sequence)
        if not self._store.record_heartbeat(amphora_id, lb_id, self._clock(), stamp):
            log.info("ignoring heartbeat of unknown amphora %s (lb %s)", amphora_id, lb_id)
            return HeartbeatOutcome.UNKNOWN_AMPHORA
        graph = self._store.load_graph(lb_id)
        if graph is None:
            self._rolled_up.pop(lb_id, None)
            return HeartbeatOutcome.LOADBALANCER_GONE
        reported = _reported_counters(graph, report)
        if reported:
            update = partial(fold_report, epoch=epoch, reported=reported)
            self._store.update_listener_counters(amphora_id, lb_id, update, stamp)
        heard_from = None if stamp is None else (amphora_id, stamp)
        if self._store.apply_operating_statuses(lb_id, self._roll_up(graph, report), heard_from):
            return HeartbeatOutcome.APPLIED
        return HeartbeatOutcome.DEFERRED

    def _roll_up(self, graph: LoadBalancer, report: HealthReport) -> OperatingStatuses:
        """``roll_up(graph, report)``, the same object as last time if nothing it reads moved."""
        listeners = {lid: health.state for lid, health in report.listeners.items()}
        pools = _states(report)
        last = self._rolled_up.get(graph.id)
        if (
            last is not None
            and last.graph is graph
            and last.listeners == listeners
            and last.pools == pools
        ):
            return last.statuses
        statuses = roll_up(graph, report)
        self._rolled_up[graph.id] = _RolledUp(graph, listeners, pools, statuses)
        return statuses
