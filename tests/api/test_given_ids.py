"""The ``GivenId`` extension: an administrator (Octavia's lbaas provider driver) names the id
of the object it creates, so one object has one id in Octavia and in lbaas."""

from __future__ import annotations

import uuid

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
