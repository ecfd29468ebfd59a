"""Telling an agent that restarts from a host that is lost, when its heartbeats stop.

Host heartbeats come from the agent, so they stop as much when the agent is restarted
(an upgrade, a configuration change, a crash under a service manager: 2–22 s in the lab's
rolling upgrade) as when the machine dies or is cut off. The two call for opposite acts:
a lost host's amphorae are rebuilt elsewhere at once, while a restarting agent's keep
serving (HAProxy and keepalived do not depend on it) and rebuilding them takes a pair's
redundancy away for nothing. A SINGLE amphora's VIP can vouch for it
(``lbaas.health.probe``), but a pair's VIP says nothing of either amphora, so before this
every agent restart rebuilt the host's half of every pair.

The difference shows on the network: a live host's kernel answers a TCP connect to the
agent's port, accepting it (the agent, or a stopped one's backlog) or refusing it with a
reset (no agent listening), both within a round trip; a lost or cut-off host answers
nothing, and the connect times out. ``TcpHostProbe`` asks exactly that. What it proves is
that the host is reachable and up, not that its data plane serves: that is still judged
per amphora (the VIP probe for SINGLE; keepalived moves a pair's VIP if its MASTER's
HAProxy dies).

``HostVerdicts`` keeps one probe per silent host in flight or done, started ahead of the
host's silence reaching ``host_stale_after`` (as the amphorae's are) and repeated while
the silence lasts, so a host that answered at first and is then really lost is seen
within one more probe.
"""

from __future__ import annotations

import abc
import logging
import socket
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from lbaas.model.fleet import HostAddress

log = logging.getLogger(__name__)

#: Host probes run at once (each a TCP connect of up to the probe's timeout).
_MAX_HOST_PROBES = 8


class HostProbe(abc.ABC):
    """Whether a host whose agent is silent is still up and reachable."""

    @abc.abstractmethod
    def answers(self, host: HostAddress) -> bool:
        """True only on evidence that the host's kernel answered on the agent's port."""


class TcpHostProbe(HostProbe):
    """A TCP connect to the agent's address and port: accepted or refused is an answer."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout

    def answers(self, host: HostAddress) -> bool:
        family = socket.AF_INET6 if ":" in host.address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as conn:
            conn.settimeout(self._timeout)
            try:
                conn.connect((host.address, host.port))
            except ConnectionRefusedError:
                return True  # a reset: the host is up, nothing listens on the agent's port
            except OSError as exc:  # timed out, unreachable: no evidence of life
                log.debug("host probe of %s (%s): %s", host.host_id, host.base_url, exc)
                return False
        return True


@dataclass
class _Probe:
    started: float
    future: Future[bool]


class HostVerdicts:
    """Probes of silent hosts, in flight or done, each repeated ``every`` seconds."""

    def __init__(
        self, probe: HostProbe, *, every: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._probe = probe
        self._every = every
        self._clock = clock
        self._pool = ThreadPoolExecutor(_MAX_HOST_PROBES, thread_name_prefix="host-probe")
        self._latest: dict[str, _Probe] = {}  # the newest probe per host
        self._known: dict[str, bool] = {}  # the newest finished verdict per host
        self._lock = threading.Lock()

    def watch(self, hosts: Collection[HostAddress]) -> None:
        """Probe each of ``hosts`` unless its newest probe is under way or younger than
        ``every``; forget every other host (heard again, or gone)."""
        wanted = {h.host_id: h for h in hosts}
        now = self._clock()
        with self._lock:
            for host_id in set(self._latest) - set(wanted):
                del self._latest[host_id]
                self._known.pop(host_id, None)
            for host_id, host in wanted.items():
                latest = self._latest.get(host_id)
                if latest is not None:
                    if not latest.future.done() or now - latest.started < self._every:
                        continue
                    self._known[host_id] = _result(latest.future)
                self._latest[host_id] = _Probe(now, self._pool.submit(self._probe.answers, host))

    def answers(self, host: HostAddress) -> bool:
        """The host's verdict: the newest finished probe's, else (the first probe still
        under way) that probe's once it ends."""
        with self._lock:
            latest = self._latest.get(host.host_id)
            if latest is not None and latest.future.done():
                self._known[host.host_id] = _result(latest.future)
            known = self._known.get(host.host_id)
        if known is not None:
            return known
        if latest is None:  # never watched: probe now
            return self._probe.answers(host)
        return _result(latest.future)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _result(future: Future[bool]) -> bool:
    try:
        return future.result()
    except Exception:  # a probe that failed is no evidence of life
        log.exception("host probe failed")
        return False
