"""Conventions handled at the edge: versions, /v2.0, .json, Accept, body size, request id."""

from __future__ import annotations

from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api


def test_version_discovery(api: Api) -> None:
    body = api.get("/").json()
    ids = [v["id"] for v in body["versions"]]
    assert ids[0] == "v2.0" and ids[-1] == "v2.30" and len(ids) == 31
    assert [v["status"] for v in body["versions"]].count("CURRENT") == 1
    assert body["versions"][-1]["status"] == "CURRENT"
    assert all(
        v["links"] == [{"href": "http://testserver/v2", "rel": "self"}] for v in body["versions"]
    )
    for path in ("/v2", "/v2.0", "/v2/lbaas", "/v2.0/octavia"):
        assert api.get(path).json() == "v2"


def test_v2_0_alias_and_json_suffix(api: Api) -> None:
    lb = api.create_lb(name="alias")
    for path in (
        f"/v2.0/lbaas/loadbalancers/{lb['id']}",
        f"/v2/lbaas/loadbalancers/{lb['id']}.json",
        f"/v2.0/lbaas/loadbalancers/{lb['id']}.json",
    ):
        r = api.get(path)
        assert r.status_code == 200, path
        assert r.json()["loadbalancer"]["name"] == "alias"
    assert api.get("/v2.0/lbaas/loadbalancers.json").json()["loadbalancers"][0]["id"] == lb["id"]


def test_accept_header(api: Api) -> None:
    for accept in ("", "*/*", "application/json", "text/html, application/json;q=0.9", "garbage"):
        assert api.get("/v2/lbaas/loadbalancers", headers={"Accept": accept}).status_code == 200
    r = api.get("/v2/lbaas/loadbalancers", headers={"Accept": "application/xml"})
    assert r.status_code == 406
    assert r.json()["title"] == "Not Acceptable"


def test_oversized_body_is_413(api: Api) -> None:
    big = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "description": "x" * 200000}}
    assert_fault(api.post("/v2/lbaas/loadbalancers", big), 413)


def test_every_response_has_a_request_id(api: Api) -> None:
    for r in (
        api.get("/"),
        api.get("/v2/lbaas/loadbalancers/nope"),
        api.get("/v2/lbaas/loadbalancers"),
    ):
        assert r.headers["x-openstack-request-id"].startswith("req-")


def test_integer_and_boolean_coercion(api: Api) -> None:
    body = {"vip_subnet_id": LOOPBACK_SUBNET, "admin_state_up": "yes"}
    r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": body})
    assert r.status_code == 201
    assert r.json()["loadbalancer"]["admin_state_up"] is True
    body["admin_state_up"] = "maybe"
    assert_fault(
        api.post("/v2/lbaas/loadbalancers", {"loadbalancer": body}), 400, "unambiguous boolean"
    )
    body["admin_state_up"] = None
    r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": body})
    assert r.json()["loadbalancer"]["admin_state_up"] is False


def test_networking_and_identity_reads_for_the_cli(api: Api) -> None:
    for prefix in ("/v2.0", "/v2"):
        subnets = api.get(f"{prefix}/subnets", params={"id": LOOPBACK_SUBNET}).json()["subnets"]
        assert [s["cidr"] for s in subnets] == ["127.0.10.0/24"]
        by_name = api.get(f"{prefix}/subnets", params={"name": "lbaas-loopback"}).json()
        assert [s["id"] for s in by_name["subnets"]] == [LOOPBACK_SUBNET]
        one = api.get(f"{prefix}/subnets/{LOOPBACK_SUBNET}").json()["subnet"]
        assert one["network_id"] == "7f000a00-0000-4000-8000-000000000000"
        assert api.get(f"{prefix}/subnets/nope").status_code == 404
        nets = api.get(f"{prefix}/networks").json()["networks"]
        assert LOOPBACK_SUBNET in nets[0]["subnets"]
    project = api.get("/v3/projects/p-alpha").json()["project"]
    assert project["id"] == "p-alpha"


def test_vip_port_is_visible_and_reusable_only_by_its_owner(api: Api) -> None:
    lb = api.create_lb()
    port = api.get(f"/v2.0/ports/{lb['vip_port_id']}").json()["port"]
    assert port["fixed_ips"] == [{"subnet_id": LOOPBACK_SUBNET, "ip_address": lb["vip_address"]}]
    r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_port_id": lb["vip_port_id"]}})
    assert_fault(r, 400, "already used by device")


def test_unknown_route_is_404(api: Api) -> None:
    assert api.get("/v2/lbaas/nothing").status_code == 404
