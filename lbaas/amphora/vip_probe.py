"""Continuous end-to-end probing of the VIPs an agent serves.

HAProxy's statistics say a frontend is OPEN, which is what HAProxy believes; they cannot
tell that clients no longer reach it (an address removed, a filter dropping the port, a
listener socket gone). So every ``agent.vip_probe_interval`` seconds the agent opens a TCP
connection to each enabled listener's VIP:port, from where a client's connection would
arrive at the amphora: in loopback mode directly, in netns mode from a thread that entered
the amphora's namespace (``host.netns_thread``), so the socket leaves by the amphora's own
routes. A connect that completes within ``agent.vip_probe_timeout`` is "up"; anything else
(refused, timed out, unreachable) is "down". It comes from the VIP itself and a fixed
source port that every frontend rejects at ``tcp-request connection`` time (see
``lbaas.render.haproxy.probe_source``), so a probe is never one of the tenant's connections.

The latest result per (amphora, listener) rides in the next heartbeats (``vip_up`` in the
listener's entry); the health manager keeps it with the listener's counters and
``/metrics`` exposes it as ``lbaas_listener_vip_probe_up``. Probing runs on its own thread
so that a slow connect never delays a heartbeat.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from lbaas.host.netns_thread import enter_network_namespace
from lbaas.model.graph import ListenerId
from lbaas.model.health import HealthReport
from lbaas.render.haproxy.probe_source import VIP_PROBE_SOURCE_PORT, answered_by_reset

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeSubject:
    """One amphora's VIP and the listener ports to probe on it."""

    amphora_id: str
    address: str
    ports: Mapping[ListenerId, int]
    namespace: str | None = None
    """netns mode: the amphora's namespace, where the connects start."""


SubjectSource = Callable[[], Sequence[ProbeSubject]]


def connects(address: str, port: int, timeout: float) -> bool:
    """Whether a TCP connection to address:port completes within ``timeout`` seconds.

    Sent from the VIP itself and ``VIP_PROBE_SOURCE_PORT``, which every frontend rejects
    before counting a session; closed with a reset, so no TIME_WAIT holds that port.
    """
    return connect_error(address, port, timeout) is None


def connect_error(address: str, port: int, timeout: float) -> str | None:
    """Why a connect as ``connects`` makes it failed; None when it completed."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.settimeout(timeout)
        try:
            sock.bind((address, VIP_PROBE_SOURCE_PORT))
        except OSError as exc:
            return f"bind to {address}:{VIP_PROBE_SOURCE_PORT}: {exc.strerror or exc}"
        try:
            sock.connect((address, port))
        except TimeoutError:
            return f"no connect within {timeout:g}s"
        except OSError as exc:
            return connect_failure(exc)
    return None


def connect_failure(exc: OSError) -> str | None:
    """Why a probe's connect that raised ``exc`` failed; None when the VIP did answer
    (``answered_by_reset``)."""
    if answered_by_reset(exc, connected=False):
        return None
    return str(exc.strerror or exc)


def probe_subject(subject: ProbeSubject, timeout: float) -> dict[ListenerId, bool]:
    """Every listener port of ``subject``, probed from where its clients come in."""
    return {lid: error is None for lid, error in probe_errors(subject, timeout).items()}


def probe_errors(subject: ProbeSubject, timeout: float) -> dict[ListenerId, str | None]:
    """Every listener port of ``subject`` probed: why each connect failed, None if it
    completed."""
    if subject.namespace is None:
        return {lid: connect_error(subject.address, p, timeout) for lid, p in subject.ports.items()}
    results: dict[ListenerId, str | None] = {}

    def inside() -> None:
        # A fresh thread: entering the namespace moves only it, and it ends afterwards.
        try:
            enter_network_namespace(str(subject.namespace))
        except OSError as exc:
            log.info("cannot probe amphora %s: %s", subject.amphora_id, exc)
            results.update(dict.fromkeys(subject.ports, f"cannot enter the namespace: {exc}"))
            return
        for lid, port in subject.ports.items():
            results[lid] = connect_error(subject.address, port, timeout)

    thread = threading.Thread(target=inside, name="vip-probe-netns", daemon=True)
    thread.start()
    thread.join()
    return results


class VipProber:
    """Probes the subjects of ``source`` every ``interval`` seconds; keeps the latest."""

    def __init__(self, source: SubjectSource, interval: float, timeout: float) -> None:
        self._source = source
        self._interval = interval
        self._timeout = timeout
        self._results: dict[str, dict[ListenerId, bool]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def results(self, amphora_id: str) -> Mapping[ListenerId, bool]:
        """The latest result per listener of one amphora (empty before its first probe)."""
        with self._lock:
            return dict(self._results.get(amphora_id, {}))

    def probe_once(self) -> None:
        fresh = {s.amphora_id: probe_subject(s, self._timeout) for s in self._source()}
        with self._lock:  # amphorae gone since are forgotten with the swap
            self._results = fresh

    def start(self) -> None:
        if self._interval <= 0:
            return  # probing is off: heartbeats carry no vip_up
        self._thread = threading.Thread(target=self._run, name="vip-probe", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.probe_once()
            except Exception:  # noqa: BLE001 - top of the probe loop; the next round retries
                log.exception("VIP probe round failed")
            self._stop.wait(self._interval)


def with_probes(report: HealthReport, results: Mapping[ListenerId, bool]) -> HealthReport:
    """``report`` with each probed listener's ``vip_up`` set from ``results``."""
    if not results:
        return report
    listeners = {
        lid: health if lid not in results else replace(health, vip_up=results[lid])
        for lid, health in report.listeners.items()
    }
    return replace(report, listeners=listeners)
