"""The ``GivenId`` extension: an administrator (Octavia's lbaas provider driver) names the id
of the object it creates, so one object has one id in Octavia and in lbaas."""

from __future__ import annotations

import uuid
from typing import Any

from tests.support.api_client import LOOPBACK_SUBNET, Api


def test_an_administrator_gives_the_ids_of_a_whole_tree(admin: Api) -> None:
    ids = {name: str(uuid.uuid4()) for name in ("lb", "listener", "pool", "member", "hm")}
    body = {"id": ids["lb"], "project_id": "p-alpha", "vip_subnet_id": LOOPBACK_SUBNET}
    created = admin.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
    assert created.status_code == 201, created.text
    assert created.json()["loadbalancer"]["id"] == ids["lb"]
    admin.wait_lb(ids["lb"])
    steps = [
        (
            "/v2/lbaas/listeners",
            "listener",
            {
                "id": ids["listener"],
                "loadbalancer_id": ids["lb"],
                "protocol": "HTTP",
                "protocol_port": 80,
            },
        ),
        (
            "/v2/lbaas/pools",
            "pool",
            {
                "id": ids["pool"],
                "listener_id": ids["listener"],
                "protocol": "HTTP",
                "lb_algorithm": "ROUND_ROBIN",
            },
        ),
        (
            f"/v2/lbaas/pools/{ids['pool']}/members",
            "member",
            {"id": ids["member"], "address": "192.0.2.7", "protocol_port": 80},
        ),
        (
            "/v2/lbaas/healthmonitors",
            "healthmonitor",
            {
                "id": ids["hm"],
                "pool_id": ids["pool"],
                "type": "TCP",
                "delay": 5,
                "timeout": 3,
                "max_retries": 3,
            },
        ),
    ]
    for path, wrapper, sent in steps:
        answer = admin.post(path, json={wrapper: sent})
        assert answer.status_code == 201, answer.text
        assert answer.json()[wrapper]["id"] == sent["id"]
        admin.wait_lb(ids["lb"])
    shown = admin.get(f"/v2/lbaas/loadbalancers/{ids['lb']}").json()["loadbalancer"]
    assert shown["project_id"] == "p-alpha"
    assert shown["listeners"] == [{"id": ids["listener"]}]


def test_a_taken_id_is_a_conflict_and_changes_nothing(admin: Api) -> None:
    lb_id = str(uuid.uuid4())
    body = {"id": lb_id, "vip_subnet_id": LOOPBACK_SUBNET}
    assert admin.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body}).status_code == 201
    again = admin.post("/v2/lbaas/loadbalancers", json={"loadbalancer": {**body, "name": "b"}})
    assert again.status_code == 409, again.text
    listing = admin.get("/v2/lbaas/loadbalancers").json()["loadbalancers"]
    assert [lb["id"] for lb in listing] == [lb_id]


def test_a_project_member_may_not_give_an_id(api: Api) -> None:
    body = {"id": str(uuid.uuid4()), "vip_subnet_id": LOOPBACK_SUBNET}
    refused = api.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
    assert refused.status_code == 403
    assert api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"] == []


def test_an_id_that_is_no_uuid_is_a_400(admin: Api) -> None:
    body = {"id": "not-a-uuid", "vip_subnet_id": LOOPBACK_SUBNET}
    refused = admin.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
    assert refused.status_code == 400
    assert "faultstring" in refused.json()


def _graph(ids: dict[str, str]) -> dict[str, Any]:
    """A single-call create as Octavia's provider driver sends it: every object with its
    id, pools at the top (unnamed ones too), referenced by id."""
    return {
        "id": ids["lb"],
        "project_id": "p-alpha",
        "vip_subnet_id": LOOPBACK_SUBNET,
        "listeners": [
            {
                "id": ids["listener"],
                "protocol": "HTTP",
                "protocol_port": 80,
                "default_pool_id": ids["web"],
                "l7policies": [
                    {
                        "id": ids["policy"],
                        "action": "REDIRECT_TO_POOL",
                        "redirect_pool_id": ids["api"],
                        "rules": [
                            {
                                "id": ids["rule"],
                                "type": "PATH",
                                "compare_type": "STARTS_WITH",
                                "value": "/api",
                            }
                        ],
                    }
                ],
            }
        ],
        "pools": [
            {
                "id": ids["web"],
                "protocol": "HTTP",
                "lb_algorithm": "ROUND_ROBIN",
                "members": [{"id": ids["member"], "address": "192.0.2.7", "protocol_port": 80}],
                "healthmonitor": {
                    "id": ids["hm"],
                    "type": "HTTP",
                    "delay": 5,
                    "timeout": 3,
                    "max_retries": 3,
                },
            },
            {"id": ids["api"], "name": "api", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"},
        ],
    }


GRAPH_IDS = ("lb", "listener", "policy", "rule", "web", "api", "member", "hm")


def test_an_administrator_gives_the_ids_of_a_single_call_create(admin: Api) -> None:
    ids = {name: str(uuid.uuid4()) for name in GRAPH_IDS}
    created = admin.post("/v2/lbaas/loadbalancers", json={"loadbalancer": _graph(ids)})
    assert created.status_code == 201, created.text
    lb = created.json()["loadbalancer"]
    listener = lb["listeners"][0]
    assert (listener["id"], listener["default_pool_id"]) == (ids["listener"], ids["web"])
    policy = listener["l7policies"][0]
    assert (policy["id"], policy["redirect_pool_id"]) == (ids["policy"], ids["api"])
    assert policy["rules"][0]["id"] == ids["rule"]
    pools = {p["id"]: p for p in lb["pools"]}
    assert set(pools) == {ids["web"], ids["api"]}
    assert [m["id"] for m in pools[ids["web"]]["members"]] == [ids["member"]]
    assert pools[ids["web"]]["healthmonitor"]["id"] == ids["hm"]
    admin.wait_lb(ids["lb"])
    for path, wrapper in (
        (f"/v2/lbaas/healthmonitors/{ids['hm']}", "healthmonitor"),
        (f"/v2/lbaas/pools/{ids['web']}/members/{ids['member']}", "member"),
        (f"/v2/lbaas/l7policies/{ids['policy']}/rules/{ids['rule']}", "rule"),
    ):
        shown = admin.get(path).json()[wrapper]
        assert shown["provisioning_status"] == "ACTIVE", (path, shown)


def test_a_nested_id_is_for_administrators_only(api: Api) -> None:
    def nested(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
        listener, web = body["listeners"][0], body["pools"][0]
        policy = listener["l7policies"][0]
        return {
            "listener": listener,
            "policy": policy,
            "rule": policy["rules"][0],
            "web": web,
            "member": web["members"][0],
            "hm": web["healthmonitor"],
        }

    for where in ("listener", "policy", "rule", "web", "member", "hm"):
        body = _graph({name: str(uuid.uuid4()) for name in GRAPH_IDS})
        del body["id"], body["project_id"], body["pools"][1]["id"]
        objects = nested(body)
        objects["web"]["name"] = "web"
        listener, policy = objects["listener"], objects["policy"]
        listener["default_pool"] = {"name": listener.pop("default_pool_id") and "web"}
        policy["redirect_pool"] = {"name": policy.pop("redirect_pool_id") and "api"}
        for name, obj in objects.items():
            if name != where:
                del obj["id"]
        refused = api.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
        assert refused.status_code == 403, (where, refused.text)
    assert api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"] == []


def test_a_pool_id_given_twice_in_one_body_is_a_400(admin: Api) -> None:
    ids = {name: str(uuid.uuid4()) for name in GRAPH_IDS}
    body = _graph(ids)
    body["pools"][1]["id"] = ids["web"]
    refused = admin.post("/v2/lbaas/loadbalancers", json={"loadbalancer": body})
    assert refused.status_code == 400, refused.text
    assert "Pool ids must be unique" in refused.json()["faultstring"]
    assert admin.get("/v2/lbaas/loadbalancers").json()["loadbalancers"] == []
