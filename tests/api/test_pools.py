"""Pool API: the shared CRUD tests plus every pool rule (listeners, persistence, TLS, locks).

Tests that need listeners or L7 policies skip themselves while those routers are not
mounted (they are written by other parts of the team); they run once they are.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.resource_base import ResourceTests, assert_fault
from tests.support.api_client import Api
from tests.support.control_plane import noop_of
from tests.support.fake_providers import provider_declaring

POOL_KEYS = {
    "id",
    "name",
    "description",
    "provisioning_status",
    "operating_status",
    "admin_state_up",
    "protocol",
    "lb_algorithm",
    "session_persistence",
    "project_id",
    "tenant_id",
    "loadbalancers",
    "listeners",
    "created_at",
    "updated_at",
    "healthmonitor_id",
    "members",
    "tags",
    "tls_container_ref",
    "ca_tls_container_ref",
    "crl_container_ref",
    "tls_enabled",
    "tls_ciphers",
    "tls_versions",
    "alpn_protocols",
    "lbaas_member_down_policy",
}
MISSING = "00000000-0000-4000-8000-00000000beef"


def require_router(api: Api, path: str) -> None:
    """Skip when a router this test leans on is not mounted yet."""
    if api.get(path).status_code in (404, 405):
        pytest.skip(f"{path} is not served yet")


def pool_path(pool_id: str) -> str:
    return f"/v2/lbaas/pools/{pool_id}"


def post_pool(api: Api, **body: Any) -> Any:
    return api.post("/v2/lbaas/pools", {"pool": body})


def http_pool(lb_id: str, **extra: Any) -> dict[str, Any]:
    return {"loadbalancer_id": lb_id, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN", **extra}


class TestPools(ResourceTests):
    wrapper = "pool"
    # Octavia's argument path for unknown attributes.
    argument = "pool_.pool"
    collection = "pools"
    links_key = "pools_links"
    update_body = {
        "name": "renamed",
        "description": "new",
        "lb_algorithm": "LEAST_CONNECTIONS",
        "admin_state_up": False,
    }
    create_only = ("protocol", "loadbalancer_id", "listener_id")
    required = ("protocol", "lb_algorithm")

    def parents(self, api: Api) -> dict[str, Any]:
        return {"lb_id": api.create_lb()["id"]}

    def collection_path(self, ctx: dict[str, Any]) -> str:
        return "/v2/lbaas/pools"

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return http_pool(ctx["lb_id"], name=f"pool{n}")

    # -- shape and defaults -----------------------------------------------------------------

    def test_response_shape_and_defaults(self, api: Api) -> None:
        lb = api.create_lb()
        r = post_pool(api, **http_pool(lb["id"]))
        assert r.status_code == 201, r.text
        pool = r.json()["pool"]
        assert set(pool) == POOL_KEYS - {"healthmonitor_id"}
        assert pool["loadbalancers"] == [{"id": lb["id"]}]
        assert pool["listeners"] == [] and pool["members"] == []
        # Octavia leaves the attribute unset (absent from the JSON) without a monitor.
        assert "healthmonitor_id" not in pool
        assert pool["session_persistence"] is None
        assert pool["name"] == "" and pool["description"] == ""
        assert pool["operating_status"] == "OFFLINE"
        assert pool["admin_state_up"] is True and pool["tls_enabled"] is False
        for key in ("tls_ciphers", "tls_versions", "alpn_protocols", "tls_container_ref"):
            assert pool[key] is None, key
        assert pool["tags"] == []

    def test_needs_loadbalancer_or_listener(self, api: Api) -> None:
        body = {"protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}
        assert_fault(
            post_pool(api, **body),
            400,
            "Validation failure: Must provide at least one of: loadbalancer_id, listener_id",
        )
        assert_fault(
            post_pool(api, **body, loadbalancer_id=MISSING),
            404,
            f"Load Balancer {MISSING} not found.",
        )
        assert_fault(
            post_pool(api, **body, listener_id=MISSING), 404, f"Listener {MISSING} not found."
        )

    def test_enums_and_types(self, api: Api) -> None:
        lb = api.create_lb()
        r = post_pool(api, **http_pool(lb["id"], protocol="FTP"))
        assert_fault(r, 400, "Invalid input for field/attribute protocol. Value: 'FTP'.")
        r = post_pool(api, **http_pool(lb["id"], lb_algorithm="RANDOM"))
        assert_fault(r, 400, "Value should be one of:")
        r = post_pool(api, **http_pool(lb["id"], loadbalancer_id="nope"))
        assert_fault(r, 400, "Value should be UUID format")
        r = post_pool(api, **http_pool(lb["id"], healthmonitor={"type": "TCP"}))
        assert_fault(r, 400, "Unknown attribute for argument pool_.pool: healthmonitor")
        assert api.get("/v2/lbaas/pools").json()["pools"] == []

    def test_other_projects_load_balancer_is_403(self, api: Api) -> None:
        lb = api.create_lb()
        stranger = api.as_("p-beta", "member")
        assert_fault(post_pool(stranger, **http_pool(lb["id"])), 403, "Policy")

    # -- session persistence --------------------------------------------------------------

    def test_session_persistence_rules(self, api: Api) -> None:
        lb = api.create_lb()
        cases = [
            (
                "HTTP",
                {"type": "APP_COOKIE"},
                'Validation failure: Field "cookie_name" must be specified when using the '
                '"APP_COOKIE" session persistence type.',
            ),
            (
                "HTTP",
                {"type": "HTTP_COOKIE", "cookie_name": "c"},
                'Field "cookie_name" can only be specified with session persistence of type '
                '"APP_COOKIE".',
            ),
            ("HTTP", {"type": "APP_COOKIE", "cookie_name": "a b"}, 'Supplied "cookie_name"'),
            ("HTTP", {"type": "APP_COOKIE", "cookie_name": "a;b"}, 'Supplied "cookie_name"'),
            (
                "HTTP",
                {"type": "SOURCE_IP", "persistence_timeout": 30},
                "persistence_timeout and persistence_granularity is only for UDP and SCTP "
                "protocol pools.",
            ),
            (
                "UDP",
                {"type": "HTTP_COOKIE"},
                "Session persistence of type HTTP_COOKIE is not supported for UDP and SCTP",
            ),
            (
                "SCTP",
                {"type": "APP_COOKIE", "cookie_name": "x"},
                "Cookie names are not supported for UDP and SCTP pools.",
            ),
            (
                "UDP",
                {"type": "SOURCE_IP", "cookie_name": "x"},
                "SOURCE_IP type for UDP and SCTP protocols only accepts",
            ),
            ("HTTP", {"cookie_name": "x"}, "type. Value: 'None'. Mandatory field missing."),
            ("HTTP", {"type": "STICKY"}, "Invalid input for field/attribute type"),
        ]
        for protocol, sp, message in cases:
            r = post_pool(api, **http_pool(lb["id"], protocol=protocol, session_persistence=sp))
            assert_fault(r, 400, message)
        assert api.get("/v2/lbaas/pools").json()["pools"] == []
        status = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]
        assert status["provisioning_status"] == "ACTIVE"

    def test_session_persistence_stored_and_updated(self, api: Api) -> None:
        lb = api.create_lb()
        sp = {"type": "APP_COOKIE", "cookie_name": "JSESSIONID"}
        pool = api.create_pool(lb["id"], session_persistence=sp)
        assert pool["session_persistence"] == {
            **sp,
            "persistence_timeout": None,
            "persistence_granularity": None,
        }
        path = pool_path(pool["id"])
        r = api.put(path, {"pool": {"session_persistence": {"cookie_name": "other"}}})
        assert r.status_code == 200, r.text
        assert r.json()["pool"]["session_persistence"]["type"] == "APP_COOKIE"
        assert r.json()["pool"]["session_persistence"]["cookie_name"] == "other"
        api.wait_lb(lb["id"])
        r = api.put(path, {"pool": {"session_persistence": {"type": "SOURCE_IP"}}})
        assert r.json()["pool"]["session_persistence"]["cookie_name"] is None
        api.wait_lb(lb["id"])
        r = api.put(path, {"pool": {"session_persistence": {}}})
        assert r.json()["pool"]["session_persistence"] is None
        api.wait_lb(lb["id"])
        r = api.put(path, {"pool": {"session_persistence": {"cookie_name": "x"}}})
        assert_fault(r, 400, "Mandatory field missing")
        r = api.put(path, {"pool": {"session_persistence": {"type": "HTTP_COOKIE"}}})
        assert r.status_code == 200
        api.wait_lb(lb["id"])
        r = api.put(path, {"pool": {"session_persistence": None}})
        assert r.json()["pool"]["session_persistence"] is None
        api.wait_lb(lb["id"])

    def test_udp_source_ip_persistence(self, api: Api) -> None:
        lb = api.create_lb()
        sp = {
            "type": "SOURCE_IP",
            "persistence_timeout": 60,
            "persistence_granularity": "255.255.255.0",
        }
        pool = api.create_pool(lb["id"], protocol="UDP", session_persistence=sp)
        assert pool["session_persistence"] == {**sp, "cookie_name": None}
        r = api.put(
            pool_path(pool["id"]),
            {"pool": {"session_persistence": {"type": "APP_COOKIE", "cookie_name": "c"}}},
        )
        assert_fault(r, 400, "Cookie names are not supported")

    # -- TLS -------------------------------------------------------------------------------

    def test_tls_defaults_and_validation(self, api: Api) -> None:
        lb = api.create_lb()
        pool = api.create_pool(lb["id"], tls_enabled=True)
        assert pool["tls_versions"] == ["TLSv1.2", "TLSv1.3"]
        assert pool["alpn_protocols"] == ["h2", "http/1.1", "http/1.0"]
        assert "ECDHE-RSA-AES128-GCM-SHA256" in pool["tls_ciphers"]
        cases = [
            (
                {"tls_container_ref": "barbican://x"},
                "Could not retrieve certificate: ['barbican://x']",
            ),
            ({"ca_tls_container_ref": "ca"}, "Could not retrieve certificate: ['ca']"),
            (
                {"crl_container_ref": "crl"},
                "Validation failure: A CA certificate reference is required to specify a "
                "revocation list.",
            ),
            ({"tls_versions": []}, "Validation failure: Empty TLS version list."),
            ({"tls_versions": ["TLSv9"]}, "Validation failure: Invalid TLS versions: TLSv9"),
            ({"alpn_protocols": []}, "Empty ALPN protocol list."),
            ({"alpn_protocols": ["h3"]}, "Invalid ALPN protocol: h3"),
            ({"tls_ciphers": "bad cipher"}, "Invalid input for field/attribute tls_ciphers"),
        ]
        for extra, message in cases:
            assert_fault(post_pool(api, **http_pool(lb["id"], **extra)), 400, message)
        plain = api.create_pool(lb["id"])
        path = pool_path(plain["id"])
        assert_fault(api.put(path, {"pool": {"tls_container_ref": "x"}}), 400, "Could not retrieve")
        assert_fault(
            api.put(path, {"pool": {"crl_container_ref": "crl"}}),
            400,
            "A CA reference is required to specify a certificate revocation list.",
        )
        r = api.put(path, {"pool": {"tls_enabled": True, "tls_versions": ["TLSv1.3"]}})
        assert r.status_code == 200, r.text
        updated = r.json()["pool"]
        assert updated["tls_versions"] == ["TLSv1.3"]
        assert updated["alpn_protocols"] == ["h2", "http/1.1", "http/1.0"]
        api.wait_lb(lb["id"])
        r = api.put(path, {"pool": {"tls_versions": None, "tls_container_ref": None}})
        assert r.json()["pool"]["tls_versions"] == ["TLSv1.2", "TLSv1.3"]
        api.wait_lb(lb["id"])

    # -- update rules ------------------------------------------------------------------------

    def test_update_rules(self, api: Api) -> None:
        lb = api.create_lb()
        pool = api.create_pool(lb["id"], tags=["a"])
        path = pool_path(pool["id"])
        assert_fault(
            api.put(path, {"pool": {"lb_algorithm": None}}),
            400,
            "None is not a valid option for lb_algorithm",
        )
        r = api.put(path, {"pool": {"tags": ["b", "c"], "admin_state_up": None}})
        assert r.status_code == 200
        assert r.json()["pool"]["tags"] == ["b", "c"]
        assert r.json()["pool"]["admin_state_up"] is False
        api.wait_lb(lb["id"])
        r = api.put(path, {"pool": {"tags": None}})
        assert r.json()["pool"]["tags"] == ["b", "c"]
        api.wait_lb(lb["id"])

    def test_capabilities_are_checked(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        pool = api.create_pool(lb["id"])
        with provider_declaring(
            plane,
            lb_algorithms=frozenset({"ROUND_ROBIN"}),
            pool_protocols=frozenset({"HTTP"}),
            persistence_types=frozenset({"SOURCE_IP"}),
        ):
            assert_fault(
                post_pool(api, **http_pool(lb["id"], lb_algorithm="SOURCE_IP_PORT")),
                400,
                "Provider 'noop' does not support a requested option: lb_algorithm SOURCE_IP_PORT",
            )
            assert_fault(
                post_pool(api, **http_pool(lb["id"], protocol="TCP")),
                400,
                "does not support a requested option: protocol TCP",
            )
            sp = {"type": "HTTP_COOKIE"}
            assert_fault(
                post_pool(api, **http_pool(lb["id"], session_persistence=sp)),
                400,
                "session_persistence type HTTP_COOKIE",
            )
            r = api.put(pool_path(pool["id"]), {"pool": {"lb_algorithm": "LEAST_CONNECTIONS"}})
            assert_fault(r, 400, "lb_algorithm LEAST_CONNECTIONS")
        assert len(api.get("/v2/lbaas/pools").json()["pools"]) == 1

    # -- listeners -------------------------------------------------------------------------

    def test_pool_on_listener(self, api: Api, plane: Any) -> None:
        require_router(api, "/v2/lbaas/listeners")
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            r = post_pool(
                api,
                listener_id=listener["id"],
                protocol="HTTP",
                lb_algorithm="ROUND_ROBIN",
            )
            assert r.status_code == 201, r.text
            pool = r.json()["pool"]
            assert pool["listeners"] == [{"id": listener["id"]}]
            assert pool["loadbalancers"] == [{"id": lb["id"]}]
            shown = api.get(f"/v2/lbaas/listeners/{listener['id']}").json()["listener"]
            assert shown["provisioning_status"] == "PENDING_UPDATE"
            assert shown["default_pool_id"] == pool["id"]
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])
        body = {"listener_id": listener["id"], "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}
        assert_fault(post_pool(api, **body), 409, "This listener already has a default pool")
        assert len(api.get("/v2/lbaas/pools").json()["pools"]) == 1

    def test_only_a_pool_on_a_listener_goes_online(self, api: Api) -> None:
        """As in Octavia (octavia-tempest-plugin's pool tests): a standalone pool carries
        no traffic and stays OFFLINE once ACTIVE; a listener's pool goes ONLINE, and a
        standalone one does when made a listener's default pool, and is OFFLINE again
        when unset. Its member keeps the status it was created with."""
        require_router(api, "/v2/lbaas/listeners")
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])

        def operating(pool_id: str) -> str:
            shown = api.get(pool_path(pool_id)).json()["pool"]
            assert shown["provisioning_status"] == "ACTIVE"
            return str(shown["operating_status"])

        attached = api.create_pool(lb["id"], listener_id=listener["id"])
        standalone = api.create_pool(lb["id"])
        member = api.create_member(lb["id"], standalone["id"])
        assert (operating(attached["id"]), operating(standalone["id"])) == ("ONLINE", "OFFLINE")
        member_path = f"{pool_path(standalone['id'])}/members/{member['id']}"
        assert api.get(member_path).json()["member"]["operating_status"] == "NO_MONITOR"
        other = api.create_listener(lb["id"], protocol_port=8080)
        for default, expected in ((standalone["id"], "ONLINE"), (None, "OFFLINE")):
            r = api.put(
                f"/v2/lbaas/listeners/{other['id']}", {"listener": {"default_pool_id": default}}
            )
            assert r.status_code == 200, r.text
            api.wait_lb(lb["id"])
            assert operating(standalone["id"]) == expected
        tree = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}/status").json()["statuses"]
        assert tree["loadbalancer"]["operating_status"] == "ONLINE"

    def test_listener_protocol_compatibility(self, api: Api) -> None:
        require_router(api, "/v2/lbaas/listeners")
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])
        body = {"listener_id": listener["id"], "protocol": "UDP", "lb_algorithm": "ROUND_ROBIN"}
        assert_fault(
            post_pool(api, **body),
            400,
            "Validation failure: The pool protocol 'UDP' is invalid while the listener "
            "protocol is 'HTTP'.",
        )
        other = api.create_lb()
        body = {**body, "protocol": "HTTP", "loadbalancer_id": other["id"]}
        assert_fault(post_pool(api, **body), 404, f"Listener {listener['id']} not found.")
        prom = api.create_listener(lb["id"], protocol="PROMETHEUS", protocol_port=9100)
        body = {"listener_id": prom["id"], "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}
        assert_fault(
            post_pool(api, **body), 400, "Protocol PROMETHEUS listeners cannot have child objects."
        )
        assert api.get("/v2/lbaas/pools").json()["pools"] == []

    def test_update_and_delete_lock_listeners(self, api: Api, plane: Any) -> None:
        require_router(api, "/v2/lbaas/listeners")
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])
        pool = api.create_pool(lb["id"], listener_id=listener["id"])
        listener_path = f"/v2/lbaas/listeners/{listener['id']}"
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            assert api.put(pool_path(pool["id"]), {"pool": {"name": "x"}}).status_code == 200
            shown = api.get(listener_path).json()["listener"]
            assert shown["provisioning_status"] == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])
        listed = api.get("/v2/lbaas/pools", params={"listener_id": listener["id"]}).json()
        assert [p["id"] for p in listed["pools"]] == [pool["id"]]
        assert api.delete(pool_path(pool["id"])).status_code == 204
        api.wait_lb(lb["id"])
        assert api.get(listener_path).json()["listener"]["default_pool_id"] is None

    def test_delete_refused_while_l7_policy_redirects(self, api: Api) -> None:
        require_router(api, "/v2/lbaas/listeners")
        require_router(api, "/v2/lbaas/l7policies")
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])
        pool = api.create_pool(lb["id"])
        policy = api.create_l7policy(
            lb["id"], listener["id"], action="REDIRECT_TO_POOL", redirect_pool_id=pool["id"]
        )
        assert api.get(pool_path(pool["id"])).json()["pool"]["listeners"] == []
        if api.get(f"/v2/lbaas/l7policies/{policy['id']}/rules").status_code == 200:
            api.create_l7rule(lb["id"], policy["id"])
            shown = api.get(pool_path(pool["id"])).json()["pool"]
            assert shown["listeners"] == [{"id": listener["id"]}]
        assert_fault(
            api.delete(pool_path(pool["id"])),
            409,
            f"Pool {pool['id']} is in use by L7 policy {policy['id']}",
        )
        assert api.get(pool_path(pool["id"])).json()["pool"]["provisioning_status"] == "ACTIVE"

    # -- delete ----------------------------------------------------------------------------

    def test_delete_takes_members_and_monitor(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        pool = api.create_pool(lb["id"])
        member = api.create_member(lb["id"], pool["id"])
        hm = api.create_healthmonitor(lb["id"], pool["id"])
        shown = api.get(pool_path(pool["id"])).json()["pool"]
        assert shown["members"] == [{"id": member["id"]}]
        assert shown["healthmonitor_id"] == hm["id"]
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            assert api.delete(pool_path(pool["id"])).status_code == 204
            member_path = f"{pool_path(pool['id'])}/members/{member['id']}"
            got = api.get(member_path).json()["member"]
            assert got["provisioning_status"] == "PENDING_DELETE"
            got = api.get(f"/v2/lbaas/healthmonitors/{hm['id']}").json()["healthmonitor"]
            assert got["provisioning_status"] == "PENDING_DELETE"
            lb_now = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]
            assert lb_now["provisioning_status"] == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])
        assert_fault(api.get(pool_path(pool["id"])), 404, f"Pool {pool['id']} not found.")
        assert_fault(api.get(f"/v2/lbaas/healthmonitors/{hm['id']}"), 404)
        assert api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]["pools"] == []

    def test_list_filters(self, api: Api) -> None:
        lb = api.create_lb()
        a = api.create_pool(lb["id"], protocol="TCP", tls_enabled=True)
        b = api.create_pool(lb["id"], admin_state_up=False)
        hm = api.create_healthmonitor(lb["id"], b["id"])

        def ids(**params: Any) -> list[str]:
            body = api.get("/v2/lbaas/pools", params=params).json()
            return [p["id"] for p in body["pools"]]

        assert ids(protocol="TCP") == [a["id"]]
        assert ids(admin_state_up="false") == [b["id"]]
        assert ids(tls_enabled="true") == [a["id"]]
        assert ids(loadbalancer_id=lb["id"]) == [a["id"], b["id"]]
        assert ids(healthmonitor_id=hm["id"]) == [b["id"]]
        assert ids(sort="protocol:desc") == [a["id"], b["id"]]


class TestPoolQuota:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"quota": {"pool": 1}}

    def test_quota_is_enforced(self, api: Api) -> None:
        lb = api.create_lb()
        api.create_pool(lb["id"])
        assert_fault(
            post_pool(api, **http_pool(lb["id"])), 403, "Quota has been met for resources: Pool"
        )
        assert len(api.get("/v2/lbaas/pools").json()["pools"]) == 1
