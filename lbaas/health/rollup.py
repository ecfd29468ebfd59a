"""Operating statuses of a whole load balancer from its graph and one health report.

Octavia computes operating statuses while it walks a heartbeat, writing rows as it goes;
the rules end up spread over a long function with the database in the middle of them. Here
the roll-up is a pure function of the desired graph and the observed report, so each rule
(octavia-v2-api.md §3.2) can be read in one place and tested in a table, and whoever owns
persistence writes the result in one go.

Three things come from the graph alone and so hold with or without a report: an object
that is administratively down (or under a load balancer that is) is OFFLINE, a pool no
listener uses (neither as its default pool nor through an L7 policy) is OFFLINE, since
nothing can send it traffic (as in Octavia, where only the pools a listener reports are
ever brought ONLINE), and a member of weight 0 is DRAINING. Without a report (nothing
heard from the data plane yet) the result is the "just deployed" view: enabled listeners
and the pools they use ONLINE, members NO_MONITOR when their pool has no enabled health
monitor and OFFLINE (not yet checked) otherwise.

A pool is working when at least one member carries traffic (ONLINE, DRAINING or
NO_MONITOR); one whose backend is reported down, or with members none of which is working,
is ERROR. Beyond the letter of §3.2, a listener in ERROR (enabled but not reported) lowers
the load balancer to DEGRADED, following the table's definition of DEGRADED as "some
components are in ERROR". Whether a status may be written at all (not while a converge is
in flight) is the store's concern, not this module's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import (
    HealthMonitorId,
    L7PolicyId,
    L7RuleId,
    Listener,
    ListenerId,
    LoadBalancer,
    LoadBalancerId,
    Member,
    MemberId,
    Pool,
    PoolId,
)
from lbaas.model.health import (
    HealthReport,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)

ONLINE = OperatingStatus.ONLINE
OFFLINE = OperatingStatus.OFFLINE
DEGRADED = OperatingStatus.DEGRADED
DRAINING = OperatingStatus.DRAINING
ERROR = OperatingStatus.ERROR
NO_MONITOR = OperatingStatus.NO_MONITOR

# A member in one of these states still carries traffic, so its pool is working.
_WORKING = frozenset({ONLINE, DRAINING, NO_MONITOR})


_SECTIONS = ("listeners", "pools", "members", "health_monitors", "l7policies", "l7rules")


@dataclass(frozen=True, eq=False)
class OperatingStatuses(Mapping[str, OperatingStatus]):
    """Every object's operating status under one load balancer.

    Reads as one mapping from object id to status (ids are UUIDs, unique across kinds),
    which is what the status writer takes; the per-kind sections are there for callers and
    tests that care about one kind. Instances are read-only, and equal to any mapping with
    the same items.
    """

    loadbalancer_id: LoadBalancerId
    loadbalancer: OperatingStatus
    listeners: Mapping[ListenerId, OperatingStatus] = field(default_factory=dict)
    pools: Mapping[PoolId, OperatingStatus] = field(default_factory=dict)
    members: Mapping[MemberId, OperatingStatus] = field(default_factory=dict)
    health_monitors: Mapping[HealthMonitorId, OperatingStatus] = field(default_factory=dict)
    l7policies: Mapping[L7PolicyId, OperatingStatus] = field(default_factory=dict)
    l7rules: Mapping[L7RuleId, OperatingStatus] = field(default_factory=dict)
    _all: Mapping[str, OperatingStatus] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        combined: dict[str, OperatingStatus] = {self.loadbalancer_id: self.loadbalancer}
        for name in _SECTIONS:
            section = MappingProxyType(dict(getattr(self, name)))
            object.__setattr__(self, name, section)
            combined.update(section)
        object.__setattr__(self, "_all", MappingProxyType(combined))

    def by_kind(self) -> dict[str, Mapping[str, OperatingStatus]]:
        """The statuses per kind of object, the load balancer's as a one-entry mapping."""
        return {
            "loadbalancer": {self.loadbalancer_id: self.loadbalancer},
            **{name: getattr(self, name) for name in _SECTIONS},
        }

    def __getitem__(self, object_id: str) -> OperatingStatus:
        return self._all[object_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)


def roll_up(graph: LoadBalancer, report: HealthReport | None) -> OperatingStatuses:
    """Operating statuses of every object in ``graph`` given what ``report`` observed.

    ``report`` None means nothing has been heard from the data plane yet. A report for
    another load balancer is a caller's bug and raises ValueError.
    """
    if report is not None and report.loadbalancer_id != graph.id:
        raise ValueError(
            f"report for load balancer {report.loadbalancer_id} rolled up "
            f"against graph of {graph.id}"
        )
    lb_up = graph.admin_state_up
    pools: dict[PoolId, OperatingStatus] = {}
    members: dict[MemberId, OperatingStatus] = {}
    monitors: dict[HealthMonitorId, OperatingStatus] = {}
    in_use = {p.id for li in graph.listeners for p in graph.pools_of_listener(li)}
    for pool in graph.pools:
        enabled = lb_up and pool.admin_state_up
        observed = report.pools.get(pool.id) if report is not None else None
        member_statuses = {m.id: _member_status(m, pool, observed, enabled) for m in pool.members}
        members.update(member_statuses)
        pools[pool.id] = _pool_status(
            pool, observed, member_statuses, enabled and pool.id in in_use, report is None
        )
        if pool.health_monitor is not None:
            monitors[pool.health_monitor.id] = _enabled(pool.health_monitor.admin_state_up)
    listeners = {li.id: _listener_status(li, lb_up, report) for li in graph.listeners}
    policies = {p.id: _enabled(p.admin_state_up) for li in graph.listeners for p in li.l7policies}
    rules = {
        r.id: _enabled(r.admin_state_up)
        for li in graph.listeners
        for p in li.l7policies
        for r in p.rules
    }
    return OperatingStatuses(
        loadbalancer_id=graph.id,
        loadbalancer=_loadbalancer_status(lb_up, listeners.values(), pools.values()),
        listeners=listeners,
        pools=pools,
        members=members,
        health_monitors=monitors,
        l7policies=policies,
        l7rules=rules,
    )


def _enabled(admin_state_up: bool) -> OperatingStatus:
    return ONLINE if admin_state_up else OFFLINE


def _is_monitored(pool: Pool) -> bool:
    return pool.health_monitor is not None and pool.health_monitor.admin_state_up


def _member_status(
    member: Member,
    pool: Pool,
    observed: PoolHealth | None,
    pool_enabled: bool,
) -> OperatingStatus:
    if not (pool_enabled and member.admin_state_up):
        return OFFLINE
    state = observed.members.get(member.id) if observed is not None else None
    if state is MemberState.MAINT:
        return OFFLINE
    if member.weight == 0 or state is MemberState.DRAIN:
        return DRAINING
    if not _is_monitored(pool) or state is MemberState.NO_CHECK:
        return NO_MONITOR
    if state is None:  # monitored, but not (yet) reported
        return OFFLINE
    return ONLINE if state is MemberState.UP else ERROR


def _pool_status(
    pool: Pool,
    observed: PoolHealth | None,
    member_statuses: Mapping[MemberId, OperatingStatus],
    carrying: bool,
    nothing_heard: bool,
) -> OperatingStatus:
    if not carrying:  # disabled, or no listener uses it
        return OFFLINE
    if nothing_heard:
        return ONLINE
    if observed is None:
        return OFFLINE
    if not pool.members:
        return ONLINE
    statuses = member_statuses.values()
    if observed.state is PoolState.DOWN or not any(s in _WORKING for s in statuses):
        return ERROR
    if ERROR in statuses:
        return DEGRADED
    return ONLINE


def _listener_status(
    listener: Listener, lb_up: bool, report: HealthReport | None
) -> OperatingStatus:
    if not (lb_up and listener.admin_state_up):
        return OFFLINE
    if report is None:
        return ONLINE
    observed = report.listeners.get(listener.id)
    if observed is None or observed.state is ListenerState.DOWN:
        return ERROR
    return DEGRADED if observed.state is ListenerState.FULL else ONLINE


def _loadbalancer_status(
    lb_up: bool, listeners: Iterable[OperatingStatus], pools: Iterable[OperatingStatus]
) -> OperatingStatus:
    if not lb_up:
        return OFFLINE
    pool_statuses = frozenset(pools)
    if ERROR in pool_statuses:
        return ERROR
    if DEGRADED in pool_statuses or not frozenset(listeners).isdisjoint({DEGRADED, ERROR}):
        return DEGRADED
    return ONLINE
