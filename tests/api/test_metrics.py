"""``/metrics``: off by default; when on, the control plane's state as counted in the
database and this process's responses, in Prometheus' text format."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from lbaas.compose import build_control_plane
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.control_plane import asgi_app, make_settings

LB = "/v2/lbaas/loadbalancers"
SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$")


def samples(text: str) -> dict[str, float]:
    """``name{labels}`` → value, for every sample line; every other line is a comment."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("# "):
            assert line.startswith(("# HELP ", "# TYPE ")), line
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample: {line!r}"
        out[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return out


class TestMetrics:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"api": {"metrics_enabled": True}}

    def test_state_and_responses(self, api: Api, client: TestClient) -> None:
        first, second = api.create_lb(), api.create_lb()
        api.wait_lb(first["id"])
        api.wait_lb(second["id"])
        assert api.get(f"{LB}/nope").status_code == 404
        got = client.get("/metrics")
        assert got.status_code == 200
        assert got.headers["content-type"].startswith("text/plain; version=0.0.4")
        figures = samples(got.text)
        assert figures['lbaas_loadbalancers{provisioning_status="ACTIVE"}'] == 2
        assert figures['lbaas_converge_jobs{state="queued"}'] == 0
        assert figures['lbaas_converge_jobs{state="running"}'] == 0
        assert figures["lbaas_converge_oldest_queued_seconds"] == 0
        assert figures['lbaas_api_responses_total{method="POST",code="201"}'] == 2
        assert figures['lbaas_api_responses_total{method="GET",code="404"}'] == 1


def test_off_by_default(client: TestClient) -> None:
    assert client.get("/metrics").status_code == 404


def test_a_job_no_worker_takes_is_seen_waiting(state_dir: Path) -> None:
    plane = build_control_plane(make_settings(state_dir, api={"metrics_enabled": True}))
    try:  # the worker is never started: the job can only wait
        with TestClient(asgi_app(plane)) as client:
            api = Api(client, "p-alpha", "member")
            body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
            assert api.post(LB, body).status_code == 201
            time.sleep(0.3)  # the job has now waited at least this long
            figures = samples(client.get("/metrics").text)
        assert figures['lbaas_loadbalancers{provisioning_status="PENDING_CREATE"}'] == 1
        assert figures['lbaas_converge_jobs{state="queued"}'] == 1
        assert figures['lbaas_converge_jobs{state="backing_off"}'] == 0
        assert figures["lbaas_converge_oldest_queued_seconds"] >= 0.29
    finally:
        plane.stop()
