"""From HAProxy's ``show stat`` to a ``HealthReport``, with counters that survive reloads.

Names are mapped back to lbaas ids with the renderer's own parse functions (``fe_<listener>``,
``be_<pool>``, ``srv_<member>``); rows lbaas did not name are ignored. States:

* listener: frontend ``OPEN`` is OPEN, unless its sessions reached ``slim`` (FULL); ``FULL``
  is FULL; anything else (``STOP``) is DOWN. Disabled frontends are absent from the stats;
  the controller knows them from the graph.
* pool: backend ``UP`` is UP, anything else DOWN.
* member: ``UP``/``UP 1/3`` UP, ``DOWN``/``DOWN 1/2`` DOWN, ``DRAIN``/``NOLB`` DRAIN,
  ``MAINT...`` MAINT, ``no check`` NO_CHECK.

Counters of a worker start at zero and a reload starts a new worker, so ``CounterCarry``
keeps, per listener, the sum of what earlier workers had counted. When the worker pid read
from ``show info`` changes (or a counter goes backwards), the last values read from the old
worker are folded into that carry. What an old worker counts after the last read, while it
drains, is lost; reading more often shrinks that. Active connections are a gauge and are not
carried.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lbaas.agent.runtime_api import RuntimeApi, RuntimeApiError
from lbaas.model.graph import ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from lbaas.render.haproxy.names import (
    parse_backend_name,
    parse_frontend_name,
    parse_server_name,
)

StatRow = Mapping[str, str]


@dataclass(frozen=True)
class CumulativeCounters:
    """The counters of one listener that only grow while a worker lives."""

    bytes_in: int = 0
    bytes_out: int = 0
    total_connections: int = 0
    request_errors: int = 0

    def __add__(self, other: CumulativeCounters) -> CumulativeCounters:
        return CumulativeCounters(
            self.bytes_in + other.bytes_in,
            self.bytes_out + other.bytes_out,
            self.total_connections + other.total_connections,
            self.request_errors + other.request_errors,
        )

    def dropped_below(self, other: CumulativeCounters) -> bool:
        return (
            self.bytes_in < other.bytes_in
            or self.bytes_out < other.bytes_out
            or self.total_connections < other.total_connections
            or self.request_errors < other.request_errors
        )


class CounterCarry:
    """Per-listener totals of the workers that came before the current one."""

    def __init__(self) -> None:
        self._pid: str | None = None
        self._carried: dict[ListenerId, CumulativeCounters] = {}
        self._last: dict[ListenerId, CumulativeCounters] = {}

    def observe(
        self, worker_pid: str, current: Mapping[ListenerId, CumulativeCounters]
    ) -> dict[ListenerId, CumulativeCounters]:
        """Totals since the first observation, given the current worker's own counters."""
        restarted = self._pid is not None and worker_pid != self._pid
        restarted = restarted or any(
            c.dropped_below(self._last[lid]) for lid, c in current.items() if lid in self._last
        )
        if restarted:
            for lid, last in self._last.items():
                self._carried[lid] = self._carried.get(lid, CumulativeCounters()) + last
            self._last = {}
        self._pid = worker_pid
        self._last = dict(current)
        return {lid: self._carried.get(lid, CumulativeCounters()) + c for lid, c in current.items()}


class StatsCollector:
    """Turns statistics of one amphora's HAProxy into cumulative health reports."""

    def __init__(self, loadbalancer_id: LoadBalancerId) -> None:
        self.loadbalancer_id = loadbalancer_id
        self._carry = CounterCarry()
        self._lock = threading.Lock()

    def collect(self, api: RuntimeApi) -> HealthReport:
        """Read ``show info`` and ``show stat`` (same worker on both sides) into a report."""
        with self._lock:
            for _ in range(3):
                pid = api.show_info()["Pid"]
                rows = api.show_stat()
                if api.show_info()["Pid"] == pid:
                    return self._report(pid, rows)
        raise RuntimeApiError("the haproxy worker kept changing while statistics were read")

    def report(self, worker_pid: str, rows: Sequence[StatRow]) -> HealthReport:
        """The report for ``rows`` read from the worker ``worker_pid``."""
        with self._lock:
            return self._report(worker_pid, rows)

    def _report(self, worker_pid: str, rows: Sequence[StatRow]) -> HealthReport:
        states: dict[ListenerId, ListenerState] = {}
        gauges: dict[ListenerId, int] = {}
        current: dict[ListenerId, CumulativeCounters] = {}
        pool_states: dict[PoolId, PoolState] = {}
        members: dict[PoolId, dict[MemberId, MemberState]] = {}
        for row in rows:
            proxy, service = row.get("pxname", ""), row.get("svname", "")
            if service == "FRONTEND":
                listener_id = parse_frontend_name(proxy)
                if listener_id is not None:
                    states[listener_id] = listener_state(row)
                    gauges[listener_id] = _int(row, "scur")
                    current[listener_id] = CumulativeCounters(
                        _int(row, "bin"), _int(row, "bout"), _int(row, "stot"), _int(row, "ereq")
                    )
                continue
            pool_id = parse_backend_name(proxy)
            if pool_id is None:
                continue
            if service == "BACKEND":
                up = row.get("status", "") == "UP"
                pool_states[pool_id] = PoolState.UP if up else PoolState.DOWN
                continue
            member_id = parse_server_name(service)
            if member_id is not None:
                members.setdefault(pool_id, {})[member_id] = member_state(row.get("status", ""))
        totals = self._carry.observe(worker_pid, current)
        listeners = {
            lid: ListenerHealth(
                state=states[lid],
                counters=ListenerCounters(
                    bytes_in=totals[lid].bytes_in,
                    bytes_out=totals[lid].bytes_out,
                    active_connections=gauges[lid],
                    total_connections=totals[lid].total_connections,
                    request_errors=totals[lid].request_errors,
                ),
            )
            for lid in states
        }
        pools = {
            pid: PoolHealth(state=state, members=members.get(pid, {}))
            for pid, state in pool_states.items()
        }
        return HealthReport(self.loadbalancer_id, listeners=listeners, pools=pools)


def listener_state(row: StatRow) -> ListenerState:
    status = row.get("status", "")
    if status == "FULL":
        return ListenerState.FULL
    if status != "OPEN":
        return ListenerState.DOWN
    limit = _int(row, "slim")
    return ListenerState.FULL if limit > 0 and _int(row, "scur") >= limit else ListenerState.OPEN


_MEMBER_STATES: tuple[tuple[Callable[[str], bool], MemberState], ...] = (
    (lambda s: s.startswith("UP"), MemberState.UP),
    (lambda s: s.startswith("DOWN"), MemberState.DOWN),
    (lambda s: s.startswith(("DRAIN", "NOLB")), MemberState.DRAIN),
    (lambda s: s.startswith("MAINT"), MemberState.MAINT),
    (lambda s: s.lower() == "no check", MemberState.NO_CHECK),
)


def member_state(status: str) -> MemberState:
    """The member state for a server's ``status`` column."""
    for matches, state in _MEMBER_STATES:
        if matches(status):
            return state
    return MemberState.DOWN


def _int(row: StatRow, key: str) -> int:
    try:
        return int(row.get(key) or 0)
    except ValueError:
        return 0
