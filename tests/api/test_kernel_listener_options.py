"""A listener's connection limit and timeouts on providers that balance in the kernel.

The distributed provider (and the L4 tier, the same provider) enforces a UDP listener's
client and member data timeouts (its flows' idle timeout, in whole seconds) and nothing
else of ``LISTENER_OPTIONS``; the amphora balances UDP in the kernel with a connection
limit and the same idle timeout. Anything else is refused with Octavia's 400 naming the
field and the provider, stores nothing, and Octavia's defaults stay accepted. The API sees
the declared capabilities through the noop provider where it must reach ACTIVE (updates).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lbaas.providers.amphora.capabilities import amphora_capabilities
from lbaas.providers.distributed.capabilities import DISTRIBUTED_CAPABILITIES
from tests.api.resource_base import assert_fault
from tests.support.api_client import Api
from tests.support.fake_providers import declared_by, provider_declaring

LBS = "/v2/lbaas/loadbalancers"
LISTENERS = "/v2/lbaas/listeners"
DEFAULTS = {
    "connection_limit": -1,
    "timeout_client_data": 50000,
    "timeout_member_connect": 5000,
    "timeout_member_data": 50000,
    "timeout_tcp_inspect": 0,
}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"providers": {"enabled": ["noop", "distributed"], "default": "noop"}}


def distributed_lb(protocol: str, **listener: Any) -> dict[str, Any]:
    return {
        "loadbalancer": {
            "provider": "distributed",
            "vip_subnet_id": "7f000a00-0000-4000-8000-000000000001",
            "listeners": [{"protocol": protocol, "protocol_port": 80, **listener}],
        }
    }


def test_distributed_refuses_what_the_kernel_does_not_enforce(api: Api) -> None:
    refused = [
        ("TCP", {"connection_limit": 100}, "connection_limit 100 on TCP listeners"),
        ("UDP", {"connection_limit": 1}, "no node sees the listener's whole count"),
        ("TCP", {"timeout_client_data": 10000}, "timeout_client_data 10000 on TCP"),
        ("TCP", {"timeout_member_data": 0}, "without ending idle connections"),
        ("TCP", {"timeout_member_connect": 1000}, "timeout_member_connect 1000"),
        ("UDP", {"timeout_tcp_inspect": 10}, "never waits for content"),
        ("UDP", {"timeout_client_data": 1500}, "whole seconds"),
    ]
    for protocol, fields, message in refused:
        answer = api.post(LBS, distributed_lb(protocol, **fields))
        assert_fault(answer, 400, "Provider 'distributed' does not support a requested option")
        assert_fault(answer, 400, message)
    assert api.get(LBS).json()["loadbalancers"] == []


def test_distributed_takes_the_defaults_and_udp_idle_timeouts(api: Api) -> None:
    for protocol in ("TCP", "UDP"):
        made = api.post(LBS, distributed_lb(protocol, **DEFAULTS))
        assert made.status_code == 201, made.text
    udp = distributed_lb("UDP", timeout_client_data=10000, timeout_member_data=0)
    made = api.post(LBS, udp)
    assert made.status_code == 201, made.text
    listener_id = made.json()["loadbalancer"]["listeners"][0]["id"]
    shown = api.get(f"{LISTENERS}/{listener_id}").json()["listener"]
    assert (shown["timeout_client_data"], shown["timeout_member_data"]) == (10000, 0)


@pytest.fixture
def as_distributed(plane: Any) -> Iterator[None]:
    with provider_declaring(plane, **declared_by(DISTRIBUTED_CAPABILITIES)):
        yield


@pytest.fixture
def as_netns_amphora(plane: Any) -> Iterator[None]:
    with provider_declaring(plane, **declared_by(amphora_capabilities(netns=True))):
        yield


def test_an_update_is_checked_too(api: Api, as_distributed: None) -> None:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"], protocol="TCP", protocol_port=80)
    path = f"{LISTENERS}/{listener['id']}"
    assert_fault(api.put(path, {"listener": {"connection_limit": 5}}), 400, "connection_limit")
    assert api.get(path).json()["listener"]["connection_limit"] == -1
    assert api.put(path, {"listener": {"connection_limit": -1}}).status_code == 200


def test_the_amphoras_kernel_udp_takes_a_limit_and_idle_timeouts(
    api: Api, as_netns_amphora: None
) -> None:
    lb = api.create_lb()
    udp = api.create_listener(
        lb["id"], protocol="UDP", protocol_port=53, connection_limit=10, timeout_client_data=20000
    )
    assert (udp["connection_limit"], udp["timeout_client_data"]) == (10, 20000)
    for fields, message in (
        ({"timeout_member_connect": 1000}, "no connection to a member to open"),
        ({"timeout_tcp_inspect": 1000}, "timeout_tcp_inspect 1000 on UDP listeners"),
        ({"timeout_member_data": 2500}, "use a multiple of 1000"),
    ):
        body = {"loadbalancer_id": lb["id"], "protocol": "UDP", "protocol_port": 54, **fields}
        assert_fault(api.post(LISTENERS, {"listener": body}), 400, message)
    # HAProxy's listeners take every option, whole seconds or not.
    tcp = api.create_listener(
        lb["id"], protocol="TCP", protocol_port=80, timeout_member_connect=1500
    )
    assert tcp["timeout_member_connect"] == 1500
