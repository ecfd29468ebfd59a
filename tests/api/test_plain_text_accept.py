"""``/metrics`` and ``/healthcheck`` are plain text: a client asking for ``text/plain``
(curl -H, a probe, Prometheus' own Accept header) gets it, where the Octavia API's JSON
rule refuses anything that excludes JSON with 406; that rule still holds everywhere else."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;q=0.5,"
    "application/openmetrics-text;version=0.0.1;q=0.4,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"api": {"metrics_enabled": True, "healthcheck_enabled": True}}


def test_metrics_is_served_to_whoever_asks_for_text(client: TestClient) -> None:
    for accept in ("text/plain", "text/plain; version=0.0.4", PROMETHEUS_ACCEPT, "*/*"):
        got = client.get("/metrics", headers={"Accept": accept})
        assert got.status_code == 200, (accept, got.text)
        assert got.headers["content-type"].startswith("text/plain; version=")
        assert "lbaas_loadbalancers" in got.text


def test_healthcheck_is_served_to_whoever_asks_for_text(client: TestClient) -> None:
    for accept in ("text/plain", "application/json", "*/*"):
        got = client.get("/healthcheck", headers={"Accept": accept})
        assert (got.status_code, got.text) == (200, "OK"), accept
        assert got.headers["content-type"].startswith("text/plain")


def test_the_api_still_refuses_text_plain(client: TestClient) -> None:
    got = client.get("/v2/lbaas/loadbalancers", headers={"Accept": "text/plain"})
    assert got.status_code == 406
    # A path that only begins like a text page is still the API's.
    assert client.get("/metricsx", headers={"Accept": "text/plain"}).status_code == 406
