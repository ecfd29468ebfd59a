"""``lbaas serve``'s worker child's converge histogram, shown in serve's own ``/metrics``.

Under ``serve`` the API process converges nothing: its worker runs as a child process
(``lbaas.child_worker``), so a histogram kept by the API process stays empty. The child
serves its own registry on a loopback port that serve chose (``lbaas.compose.
serve_metrics``), and this collector reads it at each scrape and passes on the converge
families, so one scrape of serve shows what its worker did.

Why a relay rather than the other two ways of seeing another process's figures:

* ``prometheus_client``'s multiprocess mode is chosen for a whole interpreter by an
  environment variable before the library is imported, changes every metric into files
  shared through a directory, and does not fit processes that several control planes in
  one test process share; it is also meant for forks of one server, not for a worker that
  runs as well on another host as ``lbaas worker``.
* Durations written to the database would be one more write per converge, and a schema
  change, for a figure only the process that converged holds.

The histogram stays the worker's own (its counts restart with the child, as a counter
does), so ``rate()`` and ``histogram_quantile()`` read it as any process's histogram.
``lbaas_converge_worker_up`` says whether the child answered this scrape.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from lbaas.metrics.process import CONVERGE_HISTOGRAM

LOG = logging.getLogger(__name__)
#: A scrape waits this long for the child at most: a busy child is late, not an error.
READ_TIMEOUT = 2.0


class WorkerRelay(Collector):
    """The converge families of the worker child's ``/metrics`` at ``url``."""

    def __init__(self, url: str, timeout: float = READ_TIMEOUT) -> None:
        self._url = url
        self._timeout = timeout

    def _read(self) -> str | None:
        try:
            with urllib.request.urlopen(self._url, timeout=self._timeout) as answer:
                body: bytes = answer.read()
        except (OSError, urllib.error.URLError) as exc:
            # A child being restarted does not answer for a second or so.
            LOG.debug("worker child's metrics at %s not read: %s", self._url, exc)
            return None
        return body.decode()

    def collect(self) -> Iterator[Metric]:
        text = self._read()
        up = GaugeMetricFamily(
            "lbaas_converge_worker_up",
            "1 when serve's worker child answered this scrape with its converge histogram.",
            value=0 if text is None else 1,
        )
        yield up
        if text is None:
            return
        for family in text_string_to_metric_families(text):
            if family.name == CONVERGE_HISTOGRAM:
                yield family
