"""Health monitor API: the shared CRUD tests plus types per pool, HTTP fields and locking."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.resource_base import ResourceTests, assert_fault
from tests.support.api_client import Api
from tests.support.control_plane import noop_of
from tests.support.fake_providers import provider_declaring

HM_KEYS = {
    "id",
    "name",
    "type",
    "delay",
    "timeout",
    "max_retries",
    "max_retries_down",
    "http_method",
    "url_path",
    "expected_codes",
    "admin_state_up",
    "project_id",
    "tenant_id",
    "pools",
    "provisioning_status",
    "operating_status",
    "created_at",
    "updated_at",
    "tags",
    "http_version",
    "domain_name",
}
PATH = "/v2/lbaas/healthmonitors"
MISSING = "00000000-0000-4000-8000-00000000beef"


def hm_body(pool_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "pool_id": pool_id,
        "type": "HTTP",
        "delay": 5,
        "timeout": 3,
        "max_retries": 3,
        **extra,
    }


def post_hm(api: Api, pool_id: str, **extra: Any) -> Any:
    return api.post(PATH, {"healthmonitor": hm_body(pool_id, **extra)})


def pool_of(api: Api, protocol: str = "HTTP") -> tuple[str, str]:
    lb = api.create_lb()
    return lb["id"], api.create_pool(lb["id"], protocol=protocol)["id"]


def no_monitors(api: Api) -> bool:
    return api.get(PATH).json()["healthmonitors"] == []


class TestHealthMonitors(ResourceTests):
    wrapper = "healthmonitor"
    # Octavia's argument path for unknown attributes.
    argument = "health_monitor_.healthmonitor"
    collection = "healthmonitors"
    links_key = "healthmonitors_links"
    update_body = {
        "name": "renamed",
        "delay": 7,
        "timeout": 4,
        "max_retries": 5,
        "max_retries_down": 2,
        "http_method": "HEAD",
        "url_path": "/health?full=1",
        "expected_codes": "200-204",
        "admin_state_up": False,
    }
    create_only = ("type", "pool_id")
    required = ("type", "delay", "timeout", "max_retries", "pool_id")

    def parents(self, api: Api) -> dict[str, Any]:
        lb = api.create_lb()
        pools = [api.create_pool(lb["id"])["id"] for _ in range(3)]
        return {"lb_id": lb["id"], "pools": pools}

    def collection_path(self, ctx: dict[str, Any]) -> str:
        return PATH

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return hm_body(ctx["pools"][n], name=f"hm{n}")

    # -- create --------------------------------------------------------------------------------

    def test_response_shape_and_defaults(self, api: Api) -> None:
        lb_id, pool_id = pool_of(api)
        r = post_hm(api, pool_id)
        assert r.status_code == 201, r.text
        hm = r.json()["healthmonitor"]
        assert set(hm) == HM_KEYS
        assert hm["pools"] == [{"id": pool_id}]
        assert (hm["http_method"], hm["url_path"], hm["expected_codes"]) == ("GET", "/", "200")
        assert hm["max_retries_down"] == 3
        assert hm["http_version"] is None and hm["domain_name"] is None
        assert hm["operating_status"] == "OFFLINE" and hm["name"] == ""
        api.wait_lb(lb_id)
        pool = api.get(f"/v2/lbaas/pools/{pool_id}").json()["pool"]
        assert pool["healthmonitor_id"] == hm["id"]
        assert_fault(post_hm(api, pool_id), 409, "This pool already has a health monitor")
        assert_fault(post_hm(api, MISSING), 404, f"Pool {MISSING} not found.")

    def test_non_http_types_refuse_http_fields(self, api: Api) -> None:
        lb_id, pool_id = pool_of(api)
        for field, value in (("url_path", "/x"), ("http_method", "GET"), ("expected_codes", "200")):
            assert_fault(
                post_hm(api, pool_id, type="TCP", **{field: value}),
                400,
                f"{field} is not a valid option for health monitors of type TCP",
            )
        assert no_monitors(api)
        r = post_hm(api, pool_id, type="TCP", http_method=None, url_path=None)
        assert r.status_code == 201, r.text
        hm = r.json()["healthmonitor"]
        assert (hm["http_method"], hm["url_path"], hm["expected_codes"]) == (None, None, None)
        api.wait_lb(lb_id)
        path = f"{PATH}/{hm['id']}"
        for field in ("http_method", "url_path", "expected_codes"):
            assert_fault(
                api.put(path, {"healthmonitor": {field: None}}),
                400,
                f"{field} is not a valid option for health monitors of type TCP",
            )
        assert api.get(path).json()["healthmonitor"]["provisioning_status"] == "ACTIVE"

    def test_types_per_pool_protocol(self, api: Api) -> None:
        lb = api.create_lb()
        http_pool = api.create_pool(lb["id"])["id"]
        udp_pool = api.create_pool(lb["id"], protocol="UDP")["id"]
        cases = [
            (
                http_pool,
                {"type": "UDP-CONNECT"},
                "Validation failure: The UDP-CONNECT type is only supported for pools of type "
                "UDP/SCTP.",
            ),
            (http_pool, {"type": "SCTP"}, "The SCTP type is only supported for pools"),
            (
                udp_pool,
                {"type": "PING"},
                "The associated pool protocol is UDP, so only a UDP-CONNECT/SCTP/TCP/HTTP "
                "health monitor is supported.",
            ),
            (
                udp_pool,
                {"type": "UDP-CONNECT", "delay": 1},
                "The request delay value 1 should be larger than 3 for UDP-CONNECT health "
                "monitor type.",
            ),
            (http_pool, {"type": "BOGUS"}, "Invalid input for field/attribute type"),
        ]
        for pool_id, extra, message in cases:
            assert_fault(post_hm(api, pool_id, **extra), 400, message)
        assert no_monitors(api)
        r = post_hm(api, udp_pool, type="UDP-CONNECT", delay=3)
        assert r.status_code == 201, r.text
        api.wait_lb(lb["id"])
        path = f"{PATH}/{r.json()['healthmonitor']['id']}"
        assert_fault(api.put(path, {"healthmonitor": {"delay": 2}}), 400, "delay value 2")
        r = post_hm(api, http_pool, type="PING")
        assert r.status_code == 201
        api.wait_lb(lb["id"])

    def test_field_syntax(self, api: Api) -> None:
        lb_id, pool_id = pool_of(api)
        bad = [
            ({"url_path": "health"}, "Invalid input for field/attribute url_path"),
            ({"url_path": "http://host/x"}, "url_path"),
            ({"url_path": "//host/x"}, "url_path"),
            ({"url_path": "/a b"}, "url_path"),
            ({"expected_codes": "2000"}, "Invalid input for field/attribute expected_codes"),
            ({"expected_codes": "20a"}, "expected_codes"),
            ({"expected_codes": "200-"}, "expected_codes"),
            ({"http_method": "FETCH"}, "Invalid input for field/attribute http_method"),
            ({"http_version": 2}, "Invalid input for field/attribute http_version"),
            ({"domain_name": "-bad-.com", "http_version": 1.1}, "domain_name"),
            ({"max_retries": 0}, "Invalid input for field/attribute max_retries"),
            ({"max_retries": 11}, "max_retries"),
            ({"max_retries_down": 11}, "max_retries_down"),
            ({"delay": -1}, "Invalid input for field/attribute delay"),
            ({"timeout": "x"}, "timeout"),
            (
                {"domain_name": "example.com"},
                "Validation failure: 'http_version' must be specified when 'domain_name' is "
                "provided.",
            ),
            (
                {"domain_name": "example.com", "http_version": 1.0},
                "http_version 1.0 is not a valid option for health monitors HTTP 1.1 domain "
                "name health check",
            ),
        ]
        for extra, message in bad:
            assert_fault(post_hm(api, pool_id, **extra), 400, message)
        assert no_monitors(api)
        good = {
            "url_path": "/status?x=1&y=%20",
            "expected_codes": "200, 202,204",
            "http_version": 1.1,
            "domain_name": "www.example.com",
            "delay": "10",
            "max_retries_down": None,
        }
        r = post_hm(api, pool_id, **good)
        assert r.status_code == 201, r.text
        hm = r.json()["healthmonitor"]
        assert hm["http_version"] == 1.1 and hm["domain_name"] == "www.example.com"
        assert hm["delay"] == 10 and hm["max_retries_down"] == 3
        assert hm["expected_codes"] == "200, 202,204"
        api.wait_lb(lb_id)

    # -- update --------------------------------------------------------------------------------

    def test_update_nulls(self, api: Api) -> None:
        lb_id, pool_id = pool_of(api)
        hm = api.create_healthmonitor(
            lb_id,
            pool_id,
            http_method="POST",
            url_path="/x",
            expected_codes="201",
            max_retries_down=5,
            http_version=1.1,
            domain_name="a.example",
        )
        path = f"{PATH}/{hm['id']}"
        for field in ("delay", "timeout", "max_retries"):
            assert_fault(
                api.put(path, {"healthmonitor": {field: None}}),
                400,
                f"None is not a valid option for {field}",
            )
        assert_fault(
            api.put(path, {"healthmonitor": {"http_version": 1.0}}),
            400,
            "http_version 1.0 is not a valid option",
        )
        assert_fault(
            api.put(path, {"healthmonitor": {"http_version": None}}),
            400,
            "'http_version' must be specified",
        )
        resets = {
            "http_method": None,
            "url_path": None,
            "expected_codes": None,
            "max_retries_down": None,
            "domain_name": None,
            "http_version": None,
        }
        r = api.put(path, {"healthmonitor": resets})
        assert r.status_code == 200, r.text
        got = r.json()["healthmonitor"]
        assert (got["http_method"], got["url_path"], got["expected_codes"]) == ("GET", "/", "200")
        assert got["max_retries_down"] == 3
        assert got["http_version"] is None and got["domain_name"] is None
        api.wait_lb(lb_id)

    # -- locking and delete ------------------------------------------------------------------

    def test_locks_pool_and_listener(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])
        pool = api.create_pool(lb["id"], listener_id=listener["id"])
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            assert post_hm(api, pool["id"]).status_code == 201
            got = api.get(f"/v2/lbaas/pools/{pool['id']}").json()["pool"]
            assert got["provisioning_status"] == "PENDING_UPDATE"
            got = api.get(f"/v2/lbaas/listeners/{listener['id']}").json()["listener"]
            assert got["provisioning_status"] == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])

    def test_delete_sets_members_no_monitor(self, api: Api, plane: Any) -> None:
        lb_id, pool_id = pool_of(api)
        hm = api.create_healthmonitor(lb_id, pool_id)
        member = api.create_member(lb_id, pool_id)
        member_path = f"/v2/lbaas/pools/{pool_id}/members/{member['id']}"
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            assert api.delete(f"{PATH}/{hm['id']}").status_code == 204
            got = api.get(member_path).json()["member"]
            assert got["operating_status"] == "NO_MONITOR"
            got = api.get(f"{PATH}/{hm['id']}").json()["healthmonitor"]
            assert got["provisioning_status"] == "PENDING_DELETE"
            pool = api.get(f"/v2/lbaas/pools/{pool_id}").json()["pool"]
            assert pool["provisioning_status"] == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb_id)
        assert_fault(api.get(f"{PATH}/{hm['id']}"), 404, f"Health Monitor {hm['id']} not found.")
        assert "healthmonitor_id" not in api.get(f"/v2/lbaas/pools/{pool_id}").json()["pool"]
        assert api.get(member_path).json()["member"]["operating_status"] == "NO_MONITOR"

    def test_capability_is_checked(self, api: Api, plane: Any) -> None:
        lb_id, pool_id = pool_of(api)
        with provider_declaring(plane, health_monitor_types=frozenset({"HTTP"})):
            assert_fault(
                post_hm(api, pool_id, type="TCP"),
                400,
                "Provider 'noop' does not support a requested option: health monitor type TCP",
            )
        assert no_monitors(api)

    def test_list_filters(self, api: Api) -> None:
        lb = api.create_lb()
        pools = [api.create_pool(lb["id"])["id"] for _ in range(2)]
        a = api.create_healthmonitor(lb["id"], pools[0], type="TCP", delay=9)
        b = api.create_healthmonitor(lb["id"], pools[1], http_version=1.1, domain_name="x.example")

        def ids(**params: Any) -> list[str]:
            return [h["id"] for h in api.get(PATH, params=params).json()["healthmonitors"]]

        assert ids(pool_id=pools[1]) == [b["id"]]
        assert ids(type="TCP") == [a["id"]]
        assert ids(delay="9") == [a["id"]]
        assert ids(http_version="1.1") == [b["id"]]
        assert ids(sort="delay:asc") == [b["id"], a["id"]]
        assert_fault(api.get(PATH, params={"http_version": "x"}), 400, "invalid")


class TestHealthMonitorQuota:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"quota": {"healthmonitor": 0}}

    def test_quota_is_enforced(self, api: Api) -> None:
        _, pool_id = pool_of(api)
        assert_fault(post_hm(api, pool_id), 403, "Quota has been met for resources: Health Monitor")
        assert no_monitors(api)
