"""One process's own instruments: what only this process saw happen.

Each lbaas process (API, worker, health manager) counts what it does in its own registry,
built here and handed to its parts through their constructors; nothing is registered in
``prometheus_client``'s global registry, so several control planes in one test process
never share a count. What the database knows is not counted here at all: the collectors of
``lbaas.metrics.database`` read it at each scrape, so any API process answers alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

# The ``*_created`` series prometheus_client adds to every counter and histogram would
# double the series of a scrape for a timestamp nobody here alerts on.
disable_created_metrics()  # type: ignore[no-untyped-call]

API_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: most API calls take milliseconds; a slow list or a write waiting on a lock
takes up to seconds."""
CONVERGE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: a converge on the noop provider takes milliseconds, one that builds an
amphora and starts HAProxy seconds."""

CONVERGE_HISTOGRAM = "lbaas_converge_duration_seconds"

UNMATCHED_ROUTE = "unmatched"
"""The route label of a request no route matched (a 404 or 405 from the router): raw
paths would make the label set as large as what scanners send."""


class ProcessMetrics:
    """This process's registry and the instruments its parts record into."""

    def __init__(self, *, converges: bool = True) -> None:
        """``converges=False``: a process that runs no converge (``lbaas serve``'s API,
        whose /metrics shows its worker child's histogram, ``lbaas.metrics.worker_relay``)
        registers no converge histogram of its own, so the name is not defined twice."""
        self.registry = CollectorRegistry(auto_describe=False)
        self.api_requests = Histogram(
            "lbaas_api_request_duration_seconds",
            "API requests of this process by method, route template and status code.",
            ["method", "route", "code"],
            buckets=API_BUCKETS,
            registry=self.registry,
        )
        self.api_responses = Counter(
            "lbaas_api_responses",
            "Responses of this API process by method and status code.",
            ["method", "code"],
            registry=self.registry,
        )
        self.converges: Histogram | None = None
        if converges:
            self.converges = Histogram(
                CONVERGE_HISTOGRAM,
                "Converges run by this worker process, by outcome: done, retry (temporary "
                "failure, retried after backoff), failed (the load balancer went to ERROR), "
                "lease_lost (another worker owns it now).",
                ["outcome"],
                buckets=CONVERGE_BUCKETS,
                registry=self.registry,
            )

    def observe_request(self, method: str, route: str, code: int, seconds: float) -> None:
        status = str(code)
        self.api_requests.labels(method, route, status).observe(seconds)
        self.api_responses.labels(method, status).inc()

    def observe_converge(self, outcome: str, seconds: float) -> None:
        if self.converges is not None:
            self.converges.labels(outcome).observe(seconds)

    def register(self, collector: Collector) -> None:
        self.registry.register(collector)


class Scrape(Collector):
    """Several collectors as one, in order: what one ``/metrics`` answer shows."""

    def __init__(self, sources: Iterable[Collector]) -> None:
        self._sources = tuple(sources)

    def collect(self) -> Iterator[Metric]:
        for source in self._sources:
            yield from source.collect()
