"""A process's own ``/metrics`` over HTTP, for the processes that serve no API (a worker,
a separate health manager).

Each process answers for itself and Prometheus scrapes each one, which is how Prometheus
expects several processes to be seen; ``prometheus_client``'s multiprocess mode (shared
files in a directory, merged at scrape) is not used: these are separate programs, often on
separate hosts, not forks of one server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import start_http_server

from lbaas.metrics.process import ProcessMetrics

LOG = logging.getLogger(__name__)


def serve_process_metrics(metrics: ProcessMetrics, host: str, port: int) -> Callable[[], None]:
    """Serve ``metrics`` on ``host:port`` in a background thread; returns the stop."""
    server, thread = start_http_server(port, addr=host, registry=metrics.registry)
    LOG.info("process metrics on http://%s:%d/metrics", host, server.server_port)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return stop
