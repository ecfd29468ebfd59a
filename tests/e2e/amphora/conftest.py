"""Fixtures of the amphora end-to-end tests: a shared ``lbaas serve``, backends.

Tests that do not disturb the service share one ``lbaas serve`` for the session (each
creates its own load balancer, so its own VIP, and deletes it afterwards; starting a serve
costs seconds). Modules whose tests disturb the whole service (failover, the CLI workflow,
the quick start) override ``serve`` with a module-scoped one of their own.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.e2e.amphora.backends import HttpBackend, ProxyProtocolBackend
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance, running_serve


class BackendFleet:
    """Backends started by one test; all stopped when it ends."""

    def __init__(self) -> None:
        self._http: list[HttpBackend] = []
        self._proxy: list[ProxyProtocolBackend] = []

    def http(self, *names: str) -> list[HttpBackend]:
        started = [HttpBackend(name) for name in names]
        self._http.extend(started)
        return started

    def proxy_aware(self) -> ProxyProtocolBackend:
        backend = ProxyProtocolBackend()
        self._proxy.append(backend)
        return backend

    def close(self) -> None:
        for backend in self._http:
            backend.close()
        for proxy in self._proxy:
            proxy.close()


SHARED_SETTINGS = {"health": {"stale_after": 10.0}, "api": {"metrics_enabled": True}}
"""Nothing in the shared service is meant to fail over: a busy machine must not make it.
``/metrics`` is on so ``test_metrics_traffic.py`` can scrape the shared service."""


@pytest.fixture(scope="session")
def serve() -> Iterator[ServeInstance]:
    if shutil.which("haproxy") is None:
        pytest.fail("haproxy is not installed; the amphora end-to-end tests need it")
    with running_serve(SHARED_SETTINGS) as instance:
        yield instance


@pytest.fixture(scope="module")
def api(serve: ServeInstance) -> Iterator[OctaviaApi]:
    with serve.api() as client:
        yield client


@pytest.fixture
def backends() -> Iterator[BackendFleet]:
    fleet = BackendFleet()
    try:
        yield fleet
    finally:
        fleet.close()
