"""The distributed provider's capabilities as the API enforces them (and MAGLEV elsewhere).

The control plane enables noop (the default) and distributed. Everything here is refused
with Octavia's 400 before anything is written, except the last create, which the API
accepts (its converge then waits for node agents that this suite does not run).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.resource_base import assert_fault
from tests.support.api_client import Api

LBS = "/v2/lbaas/loadbalancers"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"providers": {"enabled": ["noop", "distributed"], "default": "noop"}}


def single_call(listener: str, algorithm: str, **pool: Any) -> dict[str, Any]:
    return {
        "loadbalancer": {
            "provider": "distributed",
            "vip_subnet_id": "7f000a00-0000-4000-8000-000000000001",
            "listeners": [
                {
                    "protocol": listener,
                    "protocol_port": 80,
                    "default_pool": {
                        "name": "p",
                        "protocol": "UDP" if listener == "UDP" else "TCP",
                        "lb_algorithm": algorithm,
                        **pool,
                    },
                }
            ],
        }
    }


def lb_count(api: Api) -> int:
    return len(api.get(LBS).json()["loadbalancers"])


def test_l7_listeners_and_proxy_algorithms_are_refused(api: Api) -> None:
    for protocol in ("HTTP", "HTTPS", "TERMINATED_HTTPS"):
        body = single_call("TCP", "MAGLEV")
        body["loadbalancer"]["listeners"][0]["protocol"] = protocol
        assert_fault(api.post(LBS, body), 400, "Provider 'distributed' does not support")
    assert_fault(api.post(LBS, single_call("TCP", "ROUND_ROBIN")), 400, "ROUND_ROBIN")
    assert_fault(api.post(LBS, single_call("TCP", "LEAST_CONNECTIONS")), 400, "LEAST_CONN")
    cookie = {"session_persistence": {"type": "HTTP_COOKIE"}}
    assert_fault(api.post(LBS, single_call("TCP", "MAGLEV", **cookie)), 400, "HTTP_COOKIE")
    assert lb_count(api) == 0


def test_maglev_source_ip_and_udp_are_accepted(api: Api) -> None:
    sticky = {"session_persistence": {"type": "SOURCE_IP"}}
    made = api.post(LBS, single_call("UDP", "MAGLEV", **sticky))
    assert made.status_code == 201, made.text
    lb = made.json()["loadbalancer"]
    assert lb["provider"] == "distributed"
    pool_id = lb["pools"][0]["id"]
    pool = api.get(f"/v2/lbaas/pools/{pool_id}").json()["pool"]
    assert pool["lb_algorithm"] == "MAGLEV"
    assert pool["session_persistence"]["type"] == "SOURCE_IP"


def test_maglev_is_an_enum_value_other_providers_may_refuse(api: Api) -> None:
    body = single_call("TCP", "MAGLEV")
    body["loadbalancer"]["provider"] = "noop"  # noop declares every algorithm
    assert api.post(LBS, body).status_code == 201
    wrong = single_call("TCP", "MAGLEVV")
    assert_fault(api.post(LBS, wrong), 400, "lb_algorithm")


def test_prefer_local_members_is_a_distributed_flavor_key_that_must_be_boolean(
    admin: Api,
) -> None:
    profiles = "/v2/lbaas/flavorprofiles"
    listed = admin.get("/v2/lbaas/providers/distributed/flavor_capabilities").json()
    names = [item["name"] for item in listed["flavor_capabilities"]]
    assert names == ["prefer_local_members", "tier_group", "tier_return_mode"]

    def profile(provider: str, data: str) -> dict[str, Any]:
        return {"flavorprofile": {"name": "local", "provider_name": provider, "flavor_data": data}}

    for data in ('{"prefer_local_members": "yes"}', '{"prefer_local_members": 1}'):
        refused = admin.post(profiles, profile("distributed", data))
        assert_fault(refused, 400, "prefer_local_members must be true or false")
    # Another provider has no such key: Octavia's "unknown flavor metadata" refusal.
    assert (
        admin.post(profiles, profile("noop", '{"prefer_local_members": true}')).status_code == 400
    )
    # This deployment has no L4 tier: no group to name, no return mode to choose.
    for data in ('{"tier_group": "g0"}', '{"tier_return_mode": "dsr"}'):
        refused = admin.post(profiles, profile("distributed", data))
        assert_fault(refused, 400, "this deployment has no L4 tier")
    assert admin.get(profiles).json()["flavorprofiles"] == []
    made = admin.post(profiles, profile("distributed", '{"prefer_local_members": true}'))
    assert made.status_code == 201, made.text


def test_a_re_encrypting_pool_is_refused_not_sent_in_the_clear(api: Api) -> None:
    why = "tls_enabled on TCP pools (its data plane cannot encrypt to members"
    assert_fault(api.post(LBS, single_call("TCP", "MAGLEV", tls_enabled=True)), 400, why)
    assert lb_count(api) == 0
    # Without tls_enabled, the same pool is taken.
    assert api.post(LBS, single_call("TCP", "MAGLEV", tls_enabled=False)).status_code == 201
