"""A process's own ``/metrics`` over HTTP, for the processes that serve no API (a worker,
a separate health manager).

Each process answers for itself and Prometheus scrapes each one, which is how Prometheus
expects several processes to be seen; ``prometheus_client``'s multiprocess mode (shared
files in a directory, merged at scrape) is not used: these are separate programs, often on
separate hosts, not forks of one server.
"""

from __future__ import annotations

import logging

from prometheus_client import start_http_server

from lbaas.metrics.process import ProcessMetrics

LOG = logging.getLogger(__name__)


class MetricsEndpoint:
    """``metrics`` served on ``host:port`` (0: a free port) in a background thread."""

    def __init__(self, metrics: ProcessMetrics, host: str, port: int) -> None:
        self._server, self._thread = start_http_server(port, addr=host, registry=metrics.registry)
        self.port = int(self._server.server_port)
        LOG.info("process metrics on http://%s:%d/metrics", host, self.port)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
