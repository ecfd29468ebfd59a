"""The processes that serve no API show their own figures on their own port: a worker its
converges, a separate health manager its heartbeats — scraped over HTTP and parsed."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from lbaas.compose import build_worker_process
from lbaas.health.service import start_health_manager
from lbaas.metrics.endpoint import MetricsEndpoint
from lbaas.metrics.process import ProcessMetrics
from lbaas.model.graph import LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.wire.heartbeat.envelope import seal
from lbaas.wire.heartbeat.key import heartbeat_key
from lbaas.wire.heartbeat.report_codec import to_payload
from tests.support.api_client import Api
from tests.support.control_plane import asgi_app, build_plane, make_settings
from tests.support.prometheus import Exposition
from tests.support.waiting import wait_for_value


def _free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int) -> Exposition:
    answer = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert answer.status_code == 200
    return Exposition(answer.text)


def test_a_worker_process_serves_its_converges(state_dir: Path) -> None:
    from starlette.testclient import TestClient

    port = _free_port()
    settings = make_settings(state_dir, worker={"metrics_port": port})
    plane = build_plane(settings)  # its own worker is never started
    process = build_worker_process(settings, plane.database, plane.providers)
    process.start()
    try:
        assert process.metrics_address is not None
        port = process.metrics_address[1]  # the first free slot: port + 0
        with TestClient(asgi_app(plane)) as client:
            Api(client, "p-alpha", "member").create_lb()  # waits for ACTIVE: converged

        def converged() -> Exposition | None:
            seen = scrape(port)
            found = seen.matching("lbaas_converge_duration_seconds_count", outcome="done")
            return seen if found and found[0][1] >= 1 else None

        wait_for_value(converged, 15.0, "the worker's converge to be counted")
    finally:
        process.stop()
        plane.stop()
    # Stopped with its worker: nothing answers there any more.
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)


def test_a_health_manager_serves_its_heartbeats(state_dir: Path) -> None:
    udp = _free_port(socket.SOCK_DGRAM)
    settings = make_settings(state_dir, health={"bind_port": udp})
    plane = build_plane(settings)
    metrics = ProcessMetrics()
    stop_health = start_health_manager(settings, plane.database, metrics=metrics)
    endpoint = MetricsEndpoint(metrics, "127.0.0.1", 0)
    try:
        key = heartbeat_key("", state_dir.absolute())
        unknown = to_payload(HealthReport(LoadBalancerId("nope")), "no-such-amphora")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(seal(unknown, key, sender="x", epoch=1, sequence=1), ("127.0.0.1", udp))
            sender.sendto(
                seal(unknown, b"wrong", sender="x", epoch=1, sequence=2), ("127.0.0.1", udp)
            )
        port = endpoint.port

        def counted() -> Exposition | None:
            seen = scrape(port)
            done = seen.total("lbaas_heartbeats_total")
            return seen if done >= 2 else None

        seen = wait_for_value(counted, 15.0, "both datagrams to be counted")
        assert seen.value("lbaas_heartbeats_total", outcome="ignored") == 1
        assert seen.value("lbaas_heartbeats_total", outcome="rejected_signature") == 1
        assert seen.value("lbaas_failover_circuit_open", scope="all") == 0
    finally:
        endpoint.stop()
        stop_health()
        plane.stop()
