"""UDP on the amphora provider: what the API takes and refuses, with Octavia's rules.

The API checks a request against the provider's declared capabilities; these tests let the
API see exactly what the amphora provider declares (``amphora_capabilities``: with UDP when
its agents run in netns mode, without it and with a reason in loopback mode), through the
noop provider (``provider_declaring``), so the worker applies to nothing real. What is
refused is 400 in Octavia's fault shape and stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lbaas.providers.amphora.capabilities import amphora_capabilities
from tests.api.resource_base import assert_fault
from tests.support.api_client import Api
from tests.support.fake_providers import declared_by, provider_declaring

POOLS = "/v2/lbaas/pools"
LISTENERS = "/v2/lbaas/listeners"


@pytest.fixture
def netns_amphora(plane: Any) -> Iterator[None]:
    with provider_declaring(plane, **declared_by(amphora_capabilities(True))):
        yield


@pytest.fixture
def loopback_amphora(plane: Any) -> Iterator[None]:
    with provider_declaring(plane, **declared_by(amphora_capabilities(False))):
        yield


def _udp_pool(api: Api, lb_id: str, **fields: Any) -> Any:
    body = {"loadbalancer_id": lb_id, "protocol": "UDP", "lb_algorithm": "ROUND_ROBIN", **fields}
    return api.post(POOLS, {"pool": body})


def test_udp_listener_pool_monitor_and_persistence_are_accepted(
    api: Api, netns_amphora: None
) -> None:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"], protocol="UDP", protocol_port=53)
    sp = {
        "type": "SOURCE_IP",
        "persistence_timeout": 60,
        "persistence_granularity": "255.255.255.0",
    }
    pool = api.create_pool(
        lb["id"],
        listener_id=listener["id"],
        protocol="UDP",
        lb_algorithm="SOURCE_IP",
        session_persistence=sp,
    )
    assert pool["session_persistence"] == {**sp, "cookie_name": None}
    # TCP/53 next to UDP/53 is another transport: allowed, as in Octavia.
    api.create_listener(lb["id"], protocol="TCP", protocol_port=53)
    for kind, extra in (("UDP-CONNECT", {}), ("HTTP", {"url_path": "/health"})):
        other = api.create_pool(lb["id"], protocol="UDP")
        body = {"pool_id": other["id"], "type": kind, "delay": 5, "timeout": 3, "max_retries": 2}
        r = api.post("/v2/lbaas/healthmonitors", {"healthmonitor": {**body, **extra}})
        assert r.status_code == 201, r.text
        api.wait_lb(lb["id"])


POOL_REFUSALS = [
    ({"lb_algorithm": "LEAST_CONNECTIONS"}, "lb_algorithm LEAST_CONNECTIONS for UDP pools"),
    ({"lb_algorithm": "SOURCE_IP_PORT"}, "lb_algorithm SOURCE_IP_PORT"),
    (
        {"session_persistence": {"type": "HTTP_COOKIE"}},
        "Session persistence of type HTTP_COOKIE is not supported for UDP and SCTP",
    ),
    (
        {"session_persistence": {"type": "APP_COOKIE", "cookie_name": "c"}},
        "Cookie names are not supported for UDP and SCTP pools.",
    ),
    (
        {"session_persistence": {"type": "SOURCE_IP", "cookie_name": "c"}},
        "SOURCE_IP type for UDP and SCTP protocols only accepts",
    ),
]


def test_udp_pool_refusals(api: Api, netns_amphora: None) -> None:
    lb = api.create_lb()
    for fields, message in POOL_REFUSALS:
        assert_fault(_udp_pool(api, lb["id"], **fields), 400, message)
    assert api.get(POOLS).json()["pools"] == []


def test_udp_pool_algorithm_update_is_checked_too(api: Api, netns_amphora: None) -> None:
    lb = api.create_lb()
    pool = api.create_pool(lb["id"], protocol="UDP")
    api.wait_lb(lb["id"])
    r = api.put(f"{POOLS}/{pool['id']}", {"pool": {"lb_algorithm": "LEAST_CONNECTIONS"}})
    assert_fault(r, 400, "LEAST_CONNECTIONS for UDP pools")
    assert api.get(f"{POOLS}/{pool['id']}").json()["pool"]["lb_algorithm"] == "ROUND_ROBIN"
    # A TCP pool of the same provider keeps least connections (HAProxy).
    assert api.create_pool(lb["id"], protocol="TCP", lb_algorithm="LEAST_CONNECTIONS")


def test_udp_listener_and_monitor_refusals(api: Api, netns_amphora: None) -> None:
    lb = api.create_lb()
    ref = "http://key-manager/v1/containers/x"
    cases = [
        ({"protocol": "UDP", "default_tls_container_ref": ref}, "does not support TLS"),
        (
            {"protocol": "UDP", "insert_headers": {"X-Forwarded-For": "true"}},
            "insert-headers is not a valid option for a UDP protocol listener.",
        ),
        ({"protocol": "SCTP"}, "does not support a requested option: protocol SCTP"),
    ]
    for fields, message in cases:
        body = {"loadbalancer_id": lb["id"], "protocol_port": 53, **fields}
        assert_fault(api.post(LISTENERS, {"listener": body}), 400, message)
    assert api.get(LISTENERS).json()["listeners"] == []
    udp = api.create_listener(lb["id"], protocol="UDP", protocol_port=53)
    policy = {"listener_id": udp["id"], "action": "REJECT"}
    assert_fault(api.post("/v2/lbaas/l7policies", {"l7policy": policy}), 400, "L7 policies")
    pool = api.create_pool(lb["id"], protocol="UDP")
    for kind, message in (
        ("PING", "only a UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported"),
        ("SCTP", "health monitor type SCTP"),
    ):
        body = {"pool_id": pool["id"], "type": kind, "delay": 5, "timeout": 3, "max_retries": 2}
        assert_fault(api.post("/v2/lbaas/healthmonitors", {"healthmonitor": body}), 400, message)


def test_loopback_amphora_refuses_udp_with_the_reason(api: Api, loopback_amphora: None) -> None:
    lb = api.create_lb()
    body = {"loadbalancer_id": lb["id"], "protocol": "UDP", "protocol_port": 53}
    r = api.post(LISTENERS, {"listener": body})
    assert_fault(r, 400, "does not support a requested option: protocol UDP")
    assert "netns mode" in r.json()["faultstring"]
    assert_fault(_udp_pool(api, lb["id"]), 400, "protocol UDP")
    assert api.get(LISTENERS).json()["listeners"] == []


def test_udp_members_and_vips_are_ipv4_on_this_provider(api: Api, netns_amphora: None) -> None:
    lb = api.create_lb()
    pool = api.create_pool(lb["id"], protocol="UDP")
    api.wait_lb(lb["id"])
    body = {"address": "2001:db8::10", "protocol_port": 53}
    r = api.post(f"{POOLS}/{pool['id']}/members", {"member": body})
    assert_fault(r, 400, "IPv6 member for UDP")
    assert api.get(f"{POOLS}/{pool['id']}/members").json()["members"] == []
    # The same address in a TCP pool is HAProxy's business, and taken.
    tcp = api.create_pool(lb["id"], protocol="TCP")
    assert api.create_member(lb["id"], tcp["id"], address="2001:db8::10")
