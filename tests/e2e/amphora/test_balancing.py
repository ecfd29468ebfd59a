"""Balancing through a real HAProxy: round robin, weights, drain, session persistence."""

from __future__ import annotations

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import request, served_by, spread, wait_for_backends, wait_serving

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

REQUESTS = 1000


def within(share: float, expected: float, tolerance: float = 0.10) -> bool:
    """Whether ``share`` is within ``tolerance`` (relative) of ``expected``."""
    return abs(share - expected) <= tolerance * expected


def test_round_robin_spreads_requests_evenly(api: OctaviaApi, backends: BackendFleet) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "round-robin") as lb:
        service = http_service(lb, [one, two])
        wait_for_backends(service.vip, service.port, {"one", "two"})
        counts = spread(service.vip, service.port, REQUESTS)
        assert set(counts) == {"one", "two"}
        for name in ("one", "two"):
            assert within(counts[name], REQUESTS / 2), counts


def test_weights_are_honoured(api: OctaviaApi, backends: BackendFleet) -> None:
    heavy, light = backends.http("heavy", "light")
    with loadbalancer(api, "weights") as lb:
        service = http_service(lb, [heavy, light], weights=[3, 1])
        wait_for_backends(service.vip, service.port, {"heavy", "light"})
        counts = spread(service.vip, service.port, 800)
        assert within(counts["heavy"], 600), counts
        assert within(counts["light"], 200), counts


def test_weight_zero_drains_a_member(api: OctaviaApi, backends: BackendFleet) -> None:
    keep, drain = backends.http("keep", "drain")
    with loadbalancer(api, "drain") as lb:
        service = http_service(lb, [keep, drain])
        wait_for_backends(service.vip, service.port, {"keep", "drain"})
        api.update_member(lb.id, service.pool["id"], service.members["drain"]["id"], weight=0)
        before = drain.requests_seen
        counts = spread(service.vip, service.port, 200)
        assert counts == {"keep": 200}
        assert drain.requests_seen == before, "a drained member received new requests"
        api.update_member(lb.id, service.pool["id"], service.members["drain"]["id"], weight=1)
        wait_for_backends(service.vip, service.port, {"keep", "drain"})


def test_source_ip_persistence_sticks(api: OctaviaApi, backends: BackendFleet) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "source-ip") as lb:
        service = http_service(
            lb, [one, two], pool_fields={"session_persistence": {"type": "SOURCE_IP"}}
        )
        wait_serving(service.vip, service.port)
        chosen: dict[str, str] = {}
        for index in range(2, 12):
            source = f"127.0.0.{index}"
            counts = spread(service.vip, service.port, 30, source=source)
            assert len(counts) == 1, f"{source} was not kept on one member: {counts}"
            chosen[source] = next(iter(counts))
        # Round robin chooses the first member of each new client, so both are in use.
        assert set(chosen.values()) == {"one", "two"}, chosen
        for source, name in chosen.items():
            assert served_by(service.vip, service.port, source=source) == name


def test_http_cookie_persistence_sticks(api: OctaviaApi, backends: BackendFleet) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "http-cookie") as lb:
        service = http_service(
            lb, [one, two], pool_fields={"session_persistence": {"type": "HTTP_COOKIE"}}
        )
        wait_for_backends(service.vip, service.port, {"one", "two"})
        jars: dict[str, str] = {}
        for _ in range(4):
            reply = request(service.vip, service.port)
            assert reply.status == 200
            cookie = reply.headers.get("set-cookie", "")
            assert cookie, f"no persistence cookie from {reply.text}: {reply.headers}"
            jars[reply.text] = cookie.split(";", 1)[0]
        assert set(jars) == {"one", "two"}, jars
        for name, cookie in jars.items():
            counts = spread(service.vip, service.port, 50, headers={"Cookie": cookie})
            assert counts == {name: 50}, f"cookie {cookie} of {name} did not stick: {counts}"
