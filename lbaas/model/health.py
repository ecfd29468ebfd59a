"""Observed health of a load balancer's data plane, as providers and agents report it.

This is the shape of one health report (a heartbeat's payload, or a provider's ``status``
answer) before it is rolled up into Octavia's operating statuses. It mirrors what HAProxy
can tell: whether a listener is accepting (or full), whether a backend has a working
server, and per server whether its check passes, it is draining or in maintenance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from lbaas.model.graph import ListenerId, LoadBalancerId, MemberId, PoolId


class ListenerState(StrEnum):
    OPEN = "OPEN"
    FULL = "FULL"
    DOWN = "DOWN"


class PoolState(StrEnum):
    UP = "UP"
    DOWN = "DOWN"


class MemberState(StrEnum):
    UP = "UP"
    DOWN = "DOWN"
    DRAIN = "DRAIN"
    MAINT = "MAINT"
    NO_CHECK = "NO_CHECK"


@dataclass(frozen=True)
class ListenerCounters:
    """Cumulative counters of one listener since its process started; the same shape
    carries a pool's (HAProxy backend) and a member's (server) traffic, whose
    ``request_errors`` are failed connections and responses (``econ`` + ``eresp``) and
    whose ``check_failures`` are failed health checks (``chkfail``, a pool's summed over
    its servers). A listener's ``check_failures`` stays 0."""

    bytes_in: int = 0
    bytes_out: int = 0
    active_connections: int = 0
    total_connections: int = 0
    request_errors: int = 0
    requests: int = 0
    """HTTP requests received (HAProxy's ``req_tot``; 0 for TCP and UDP listeners)."""
    vip_probes: int = 0
    """Gauge: amphorae whose agent probed the listener's VIP:port in their latest report."""
    vip_answered: int = 0
    """Gauge: of those, how many got a TCP connection (see ``lbaas.amphora.vip_probe``)."""
    check_failures: int = 0

    def __add__(self, other: ListenerCounters) -> ListenerCounters:
        """Field-wise sum: over workers, amphorae or listeners; gauges add up too."""
        return ListenerCounters(
            bytes_in=self.bytes_in + other.bytes_in,
            bytes_out=self.bytes_out + other.bytes_out,
            active_connections=self.active_connections + other.active_connections,
            total_connections=self.total_connections + other.total_connections,
            request_errors=self.request_errors + other.request_errors,
            requests=self.requests + other.requests,
            vip_probes=self.vip_probes + other.vip_probes,
            vip_answered=self.vip_answered + other.vip_answered,
            check_failures=self.check_failures + other.check_failures,
        )

    def __sub__(self, other: ListenerCounters) -> ListenerCounters:
        """Field-wise difference: what was counted since ``other``."""
        return ListenerCounters(
            bytes_in=self.bytes_in - other.bytes_in,
            bytes_out=self.bytes_out - other.bytes_out,
            active_connections=self.active_connections - other.active_connections,
            total_connections=self.total_connections - other.total_connections,
            request_errors=self.request_errors - other.request_errors,
            requests=self.requests - other.requests,
            vip_probes=self.vip_probes - other.vip_probes,
            vip_answered=self.vip_answered - other.vip_answered,
            check_failures=self.check_failures - other.check_failures,
        )

    def went_down_from(self, earlier: ListenerCounters) -> bool:
        """Whether a cumulative counter is below ``earlier``'s: its process started again.

        ``active_connections`` and the VIP probe gauges may go down at any time, so they are
        not looked at.
        """
        return (
            self.bytes_in < earlier.bytes_in
            or self.bytes_out < earlier.bytes_out
            or self.total_connections < earlier.total_connections
            or self.request_errors < earlier.request_errors
            or self.requests < earlier.requests
            or self.check_failures < earlier.check_failures
        )


@dataclass(frozen=True)
class ListenerHealth:
    state: ListenerState
    counters: ListenerCounters = field(default_factory=ListenerCounters)
    vip_up: bool | None = None
    """Whether the agent's last TCP connect to the VIP:port succeeded; None: not probed."""


@dataclass(frozen=True)
class PoolHealth:
    state: PoolState
    members: Mapping[MemberId, MemberState] = field(default_factory=dict)
    counters: ListenerCounters | None = None
    """The backend's traffic; None from an agent that does not send it."""
    member_counters: Mapping[MemberId, ListenerCounters] = field(default_factory=dict)


@dataclass(frozen=True)
class HealthReport:
    """One observation of a load balancer's data plane."""

    loadbalancer_id: LoadBalancerId
    listeners: Mapping[ListenerId, ListenerHealth] = field(default_factory=dict)
    pools: Mapping[PoolId, PoolHealth] = field(default_factory=dict)
