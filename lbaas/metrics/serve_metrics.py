"""What ``lbaas serve``'s ``/metrics`` is: on by default, but never beyond loopback unless
the operator says so, and with the worker child's converges in it.

``api.metrics_enabled`` unset means: on while the API listens on a loopback address (the
default ``127.0.0.1``), so a fresh ``lbaas serve`` can be scraped by a Prometheus on the
same machine and by nothing else; off when the API listens beyond loopback, since
``/metrics`` has no authentication (it names every load balancer and project), until
``api.metrics_enabled = true`` says it may be seen there. The worker child serves its own
registry on a loopback port chosen here, passed to the child on its command line and read
back at each scrape by ``lbaas.metrics.worker_relay``.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from lbaas.config import Settings
from lbaas.metrics.process import ProcessMetrics
from lbaas.metrics.worker_relay import WorkerRelay


def is_loopback(host: str) -> bool:
    """Whether an address the API binds is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _reachable(host: str) -> str:
    """The address to read a wildcard-bound endpoint at, bracketed for a URL."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@dataclass(frozen=True)
class ServeMetrics:
    """Serve's settings with ``api.metrics_enabled`` decided, the API process's registry,
    and the exact address of the worker child's own endpoint (None: the child serves none
    beyond what ``worker.metrics_port`` asks)."""

    settings: Settings
    metrics: ProcessMetrics
    worker_address: tuple[str, int] | None

    def announcement(self) -> str:
        """serve's start-up line about ``/metrics``."""
        api = self.settings.api
        if api.metrics_enabled:
            where = "loopback only" if is_loopback(api.host) else "NOT loopback: no auth"
            return f"lbaas metrics: http://{_url_host(api.host)}:{api.port}/metrics ({where})"
        if api.metrics_enabled is False:
            return "lbaas metrics: off (api.metrics_enabled = false)"
        return (
            f"lbaas metrics: off: the API listens on {api.host}, beyond loopback "
            "(api.metrics_enabled = true serves /metrics there)"
        )


def serve_metrics(settings: Settings) -> ServeMetrics:
    enabled = settings.api.metrics_enabled
    if enabled is None and is_loopback(settings.api.host):
        api = settings.api.model_copy(update={"metrics_enabled": True})
        settings = settings.model_copy(update={"api": api})
        enabled = True
    if not enabled:
        return ServeMetrics(settings, ProcessMetrics(), None)
    metrics = ProcessMetrics(converges=False)
    worker = settings.worker
    # The operator's worker.metrics_port as configured; else a free port, on loopback.
    address = (
        (worker.metrics_host, worker.metrics_port)
        if worker.metrics_port
        else ("127.0.0.1", _free_loopback_port())
    )
    metrics.register(WorkerRelay(f"http://{_reachable(address[0])}:{address[1]}/metrics"))
    return ServeMetrics(settings, metrics, address)
