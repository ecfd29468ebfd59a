"""What a listener does with the client's address: allowed_cidrs, X-Forwarded-*, PROXY."""

from __future__ import annotations

import http.client
import json

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import request, tcp_exchange, wait_serving
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

ALLOWED = "127.0.0.2"
OTHER = "127.0.0.1"


def refused(vip: str, port: int, source: str) -> bool:
    """Whether a request from ``source`` is refused (the connection is closed unanswered)."""
    try:
        request(vip, port, source=source, timeout=5)
    except (ConnectionError, http.client.RemoteDisconnected):
        return True
    return False


def test_allowed_cidrs_refuse_other_sources(api: OctaviaApi, backends: BackendFleet) -> None:
    (one,) = backends.http("one")
    with loadbalancer(api, "allowed-cidrs") as lb:
        service = http_service(lb, [one], listener_fields={"allowed_cidrs": [f"{ALLOWED}/32"]})
        vip, port = service.vip, service.port
        wait_until(
            lambda: request(vip, port, source=ALLOWED, timeout=2).status == 200,
            30,
            "the allowed source to be served",
        )
        before = one.requests_seen
        for _ in range(5):
            assert request(vip, port, source=ALLOWED).text == "one"
            assert refused(vip, port, OTHER)
        assert one.requests_seen == before + 5, "a refused client reached the backend"

        api.update_listener(lb.id, service.listener["id"], allowed_cidrs=["127.0.0.0/29"])
        assert request(vip, port, source=OTHER).text == "one"
        assert refused(vip, port, "127.0.0.9")


def test_x_forwarded_headers_reach_the_backend(api: OctaviaApi, backends: BackendFleet) -> None:
    (one,) = backends.http("one")
    insert = {"X-Forwarded-For": "true", "X-Forwarded-Port": "true", "X-Forwarded-Proto": "true"}
    with loadbalancer(api, "forwarded-for") as lb:
        service = http_service(lb, [one], listener_fields={"insert_headers": insert})
        wait_serving(service.vip, service.port)
        seen = request(service.vip, service.port, "/echo", source="127.0.0.3").json()
        assert seen["name"] == "one"
        assert seen["headers"]["x-forwarded-for"] == "127.0.0.3"
        assert seen["headers"]["x-forwarded-port"] == str(service.port)
        assert seen["headers"]["x-forwarded-proto"] == "http"
        # The backend's own peer is HAProxy, not the client: the header is the only way.
        assert seen["client"] != "127.0.0.3"


@pytest.mark.parametrize(("pool_protocol", "version"), [("PROXY", 1), ("PROXYV2", 2)])
def test_proxy_protocol_reaches_a_proxy_aware_backend(
    api: OctaviaApi, backends: BackendFleet, pool_protocol: str, version: int
) -> None:
    backend = backends.proxy_aware()
    with loadbalancer(api, f"proxy-v{version}") as lb:
        port = lb.port()
        listener = api.create_listener(lb.id, "TCP", port)
        pool = api.create_pool(lb.id, pool_protocol, "ROUND_ROBIN", listener_id=listener["id"])
        api.create_member(lb.id, pool["id"], backend.address, backend.port)
        client = f"127.0.0.{4 + version}"

        def exchange() -> dict[str, object] | None:
            try:
                answer: dict[str, object] = json.loads(
                    tcp_exchange(lb.vip, port, b"hello\n", source=client)
                )
            except (OSError, ValueError):
                return None
            return answer

        wait_until(lambda: exchange() is not None, 30, "the TCP listener to answer")
        header = exchange()
        assert header is not None
        assert "error" not in header, header
        assert header["version"] == version
        assert header["family"] == "TCP4"
        assert header["source"] == client
        assert header["destination"] == lb.vip
        assert header["destination_port"] == port
