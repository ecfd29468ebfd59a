"""The pool extension ``lbaas_member_down_policy``: stored, shown, and refused with a 400
(changing nothing) where the provider's data plane cannot carry it out.

The API sees what the amphora provider (agents in netns mode) and the distributed provider
declare through the noop provider (``provider_declaring``), as in test_amphora_udp_rules.py;
the plain noop provider takes ``keep`` only. What each policy does to live connections is
shown against real HAProxy and nftables in tests/e2e (test_member_down_*.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lbaas.providers.amphora.capabilities import amphora_capabilities
from lbaas.providers.base import ProviderCapabilities
from lbaas.providers.distributed.capabilities import DISTRIBUTED_CAPABILITIES
from tests.api.resource_base import assert_fault
from tests.support.api_client import Api
from tests.support.fake_providers import provider_declaring

POOLS = "/v2/lbaas/pools"
FIELD = "lbaas_member_down_policy"
MOVE = "a connection cannot move to another member mid-stream"
NO_CONNECTION = "a UDP flow has no connection to close"


def _declared(caps: ProviderCapabilities) -> dict[str, Any]:
    return {f.name: getattr(caps, f.name) for f in dataclasses.fields(caps)}


def _pool(api: Api, lb_id: str, protocol: str, **fields: Any) -> Any:
    body = {"loadbalancer_id": lb_id, "protocol": protocol, "lb_algorithm": "SOURCE_IP"}
    return api.post(POOLS, {"pool": {**body, **fields}})


def _stored(api: Api, pool_id: str) -> str:
    policy: str = api.get(f"{POOLS}/{pool_id}").json()["pool"][FIELD]
    return policy


def test_keep_is_the_default_and_the_only_policy_of_a_provider_declaring_none(api: Api) -> None:
    lb = api.create_lb()
    pool = api.create_pool(lb["id"])
    assert pool[FIELD] == "keep"
    for policy in ("cut", "reroute"):
        message = (
            f"Provider 'noop' does not support a requested option: {FIELD} {policy} on HTTP pools"
        )
        assert_fault(_pool(api, lb["id"], "HTTP", **{FIELD: policy}), 400, message)
        r = api.put(f"{POOLS}/{pool['id']}", {"pool": {FIELD: policy}})
        assert_fault(r, 400, message)
    assert_fault(_pool(api, lb["id"], "HTTP", **{FIELD: "drop"}), 400, "keep")
    assert _stored(api, pool["id"]) == "keep"
    assert len(api.get(POOLS).json()["pools"]) == 1


@pytest.mark.parametrize(
    ("caps", "protocols"),
    [
        (amphora_capabilities(netns=True), ("HTTP", "TCP", "PROXY")),
        (DISTRIBUTED_CAPABILITIES, ("TCP",)),
    ],
    ids=["amphora", "distributed"],
)
def test_cut_on_connections_reroute_on_udp(
    api: Api, plane: Any, caps: ProviderCapabilities, protocols: tuple[str, ...]
) -> None:
    lb = api.create_lb()
    with provider_declaring(plane, **_declared(caps)):
        for protocol in protocols:
            algorithm = {"lb_algorithm": "SOURCE_IP"}
            pool = api.create_pool(lb["id"], protocol=protocol, **algorithm, **{FIELD: "cut"})
            assert pool[FIELD] == "cut"
            assert_fault(_pool(api, lb["id"], protocol, **{FIELD: "reroute"}), 400, MOVE)
            r = api.put(f"{POOLS}/{pool['id']}", {"pool": {FIELD: "reroute"}})
            assert_fault(r, 400, MOVE)
            assert _stored(api, pool["id"]) == "cut"
            api.wait_lb(lb["id"])
        udp = api.create_pool(lb["id"], protocol="UDP", lb_algorithm="SOURCE_IP")
        assert udp[FIELD] == "keep"
        assert_fault(_pool(api, lb["id"], "UDP", **{FIELD: "cut"}), 400, NO_CONNECTION)
        r = api.put(f"{POOLS}/{udp['id']}", {"pool": {FIELD: "reroute"}})
        assert r.status_code == 200, r.text
        assert r.json()["pool"][FIELD] == "reroute"
        api.wait_lb(lb["id"])
        r = api.put(f"{POOLS}/{udp['id']}", {"pool": {FIELD: None}})  # null: the default
        assert r.json()["pool"][FIELD] == "keep"
        api.wait_lb(lb["id"])
    assert len(api.get(POOLS).json()["pools"]) == len(protocols) + 1


def test_the_single_call_create_takes_it_too(api: Api, plane: Any) -> None:
    pool = {"name": "p", "protocol": "UDP", "lb_algorithm": "SOURCE_IP", FIELD: "reroute"}
    listener = {"protocol": "UDP", "protocol_port": 53, "default_pool": pool}
    body = {"vip_subnet_id": api.create_lb()["vip_subnet_id"], "listeners": [listener]}
    with provider_declaring(plane, **_declared(amphora_capabilities(netns=True))):
        r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": body})
        assert r.status_code == 201, r.text
        created = r.json()["loadbalancer"]["pools"][0]
        assert created[FIELD] == "reroute"
        api.wait_lb(r.json()["loadbalancer"]["id"])
