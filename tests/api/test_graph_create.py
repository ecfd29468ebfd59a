"""The fully populated (single-call) load balancer create."""

from __future__ import annotations

from typing import Any

from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api


def _tree() -> dict[str, Any]:
    return {
        "name": "full",
        "vip_subnet_id": LOOPBACK_SUBNET,
        "listeners": [
            {
                "name": "http",
                "protocol": "HTTP",
                "protocol_port": 80,
                "default_pool": {
                    "name": "web",
                    "protocol": "HTTP",
                    "lb_algorithm": "ROUND_ROBIN",
                    "members": [
                        {"address": "192.0.2.10", "protocol_port": 80},
                        {"address": "192.0.2.11", "protocol_port": 80, "weight": 3},
                    ],
                    "healthmonitor": {"type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3},
                },
                "l7policies": [
                    {
                        "action": "REDIRECT_TO_POOL",
                        "redirect_pool": {"name": "api"},
                        "rules": [{"type": "PATH", "compare_type": "STARTS_WITH", "value": "/api"}],
                    },
                    {
                        "action": "REJECT",
                        "rules": [
                            {
                                "type": "HOST_NAME",
                                "compare_type": "EQUAL_TO",
                                "value": "bad.example",
                            }
                        ],
                    },
                ],
            }
        ],
        "pools": [{"name": "api", "protocol": "HTTP", "lb_algorithm": "LEAST_CONNECTIONS"}],
    }


def test_full_tree_is_created_and_expanded(api: Api) -> None:
    r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": _tree()})
    assert r.status_code == 201, r.text
    lb = r.json()["loadbalancer"]
    assert len(lb["listeners"]) == 1
    listener = lb["listeners"][0]
    assert listener["provisioning_status"] == "PENDING_CREATE"
    assert [p["action"] for p in listener["l7policies"]] == ["REDIRECT_TO_POOL", "REJECT"]
    assert listener["l7policies"][0]["rules"][0]["value"] == "/api"
    pools = {p["name"]: p for p in lb["pools"]}
    assert set(pools) == {"web", "api"}
    assert len(pools["web"]["members"]) == 2
    assert pools["web"]["healthmonitor"]["type"] == "HTTP"
    assert listener["default_pool_id"] == pools["web"]["id"]
    assert listener["l7policies"][0]["redirect_pool_id"] == pools["api"]["id"]
    api.wait_lb(lb["id"])
    tree = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}/status").json()["statuses"]["loadbalancer"]
    assert {p["name"] for p in tree["listeners"][0]["pools"]} == {"web", "api"}
    assert all(
        m["provisioning_status"] == "ACTIVE"
        for p in tree["listeners"][0]["pools"]
        for m in p["members"]
    )


def _assert_rejected(api: Api, body: dict[str, Any], message: str) -> None:
    before = api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"]
    assert_fault(api.post("/v2/lbaas/loadbalancers", {"loadbalancer": body}), 400, message)
    assert api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"] == before
    assert api.get("/v2/lbaas/pools").json()["pools"] == []


def test_graph_create_errors_change_nothing(api: Api) -> None:
    body = _tree()
    body["pools"] = [{"protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}]
    _assert_rejected(api, body, "Pools must be named")
    body = _tree()
    body["pools"].append({"name": "api", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"})
    _assert_rejected(api, body, "Pool names must be unique")
    body = _tree()
    body["pools"] = []
    _assert_rejected(api, body, "Pool 'api' was referenced but no full definition was found.")
    body = _tree()
    body["pools"] = [{"name": "api", "protocol": "HTTP"}]
    _assert_rejected(
        api, body, "Pool definition for 'api' missing required attribute: lb_algorithm"
    )
    body = _tree()
    body["listeners"][0]["protocol_port"] = 0
    _assert_rejected(api, body, "protocol_port")
    body = _tree()
    body["listeners"][0]["bogus"] = 1
    _assert_rejected(api, body, "Unknown attribute")


def test_graph_create_counts_against_quotas(api: Api, admin: Api) -> None:
    r = admin.put("/v2/lbaas/quotas/p-alpha", {"quota": {"member": 1}})
    assert r.status_code == 202, r.text
    before = api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"]
    r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": _tree()})
    assert_fault(r, 403, "Quota has been met for resources: Member")
    assert api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"] == before
