"""Health checks of one amphora's UDP members, run from inside the amphora's namespace.

HAProxy checks the members of TCP-family pools; the UDP pools are balanced by the L4
engine, so the agent checks their members itself with ``lbaas.l4.health`` and the pool's
monitor (UDP-CONNECT, HTTP or TCP: the API's rules for UDP pools, as Octavia's). The
members sit behind the amphora's member legs, reachable only from its namespace, so the
checker's event-loop thread enters that namespace (``setns(2)``) before it creates any
socket: every probe socket then lives there, while the agent's other threads, and the
checker's sink thread that reprograms nftables, stay in the agent's own namespace.

Why a thread in the namespace rather than a probe process started in it: the checker is
one asyncio loop in one thread anyway, so entering the namespace costs one system call
and nothing else, where a process per amphora would need its own start, supervision and
a channel for results. One checker per amphora that has a monitored UDP pool, started
with the first such pool and stopped with the last: the amphora's namespace is its own
address space, so two amphorae's members must never share a checker.

Members are the targets of one group, keyed by member id (their Maglev key too); a member
starts healthy (as HAProxy's servers do), ``max_retries_down`` failures take it down and
``max_retries`` successes bring it back; every batch of changes calls ``on_changes``,
which re-applies the engine with the new health.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from lbaas.host.netns_thread import enter_network_namespace
from lbaas.l4.health.checker import ChangeSink, HealthChecker
from lbaas.l4.health.monitor import Target
from lbaas.l4.health.probes import NetworkProber
from lbaas.l4.health.wire_monitors import monitor_spec
from lbaas.model.health import MemberState
from lbaas.wire.datapath import UdpListener

#: Makes the checker of one amphora, given the sink of its batches (tests pass fakes).
CheckerFactory = Callable[[ChangeSink], HealthChecker]
_GROUP = "udp"


def namespace_checker(
    namespace: str, *, batch_count: int = 64, batch_delay: float = 0.2
) -> CheckerFactory:
    """Real probes from a checker whose loop runs inside network namespace ``namespace``
    (batches as the node's checker: ``agent.l4_health_batch_size``/``_delay``)."""

    def make(sink: ChangeSink) -> HealthChecker:
        enter = functools.partial(enter_network_namespace, namespace)
        return HealthChecker(
            NetworkProber(),
            sink,
            batch_count=batch_count,
            batch_delay=batch_delay,
            thread_setup=enter,
        )

    return make


def udp_targets(listeners: tuple[UdpListener, ...]) -> list[Target]:
    """The members of every monitored UDP listener, at their monitor address and port."""
    targets: dict[str, Target] = {}
    for listener in listeners:
        if listener.monitor is None:
            continue
        monitor = monitor_spec(listener.monitor)
        for member in listener.members:
            address = member.monitor_address or member.address
            targets[member.key] = Target(
                member.key, address, member.monitor_port or member.port, monitor
            )
    return list(targets.values())


class UdpMemberHealth:
    """The health checker of one amphora's UDP members, while it has a monitored pool."""

    def __init__(self, make_checker: CheckerFactory, on_changes: ChangeSink) -> None:
        self._make_checker = make_checker
        self._on_changes = on_changes
        self._checker: HealthChecker | None = None

    def update(self, listeners: tuple[UdpListener, ...]) -> None:
        """Check exactly the members of ``listeners``' monitors from now on.

        Must not be called while holding a lock that ``on_changes`` takes: stopping the
        checker waits for a batch being delivered.
        """
        targets = udp_targets(listeners)
        if not targets:
            self.close()
            return
        if self._checker is None:
            checker = self._make_checker(self._on_changes)
            checker.start()
            self._checker = checker
        self._checker.set_targets(_GROUP, targets)

    def healthy(self) -> dict[str, bool]:
        """Each checked member: healthy or not, as the checker sees it now."""
        return {} if self._checker is None else self._checker.states(_GROUP)

    @staticmethod
    def member_states(listener: UdpListener, healthy: dict[str, bool]) -> dict[str, MemberState]:
        """What the heartbeat reports for ``listener``'s members, from ``healthy``: the
        health the engine's table was last built with (NO_CHECK: no monitor)."""
        seen = healthy if listener.monitor is not None else {}
        states = {}
        for member in listener.members:
            up = seen.get(member.key)
            states[member.key] = (
                MemberState.NO_CHECK if up is None else (MemberState.UP if up else MemberState.DOWN)
            )
        return states

    def close(self) -> None:
        """Stop checking (the amphora is gone or has no monitored UDP pool left)."""
        checker, self._checker = self._checker, None
        if checker is not None:
            checker.stop()
