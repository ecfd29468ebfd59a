"""Listener API: the shared CRUD tests plus every listener rule (§5.2 of the API notes).

Each refused request is checked for Octavia's error body and for leaving nothing behind:
the listener list is unchanged and the load balancer is still ACTIVE (not locked).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.api.resource_base import ResourceTests, assert_fault
from tests.support.api_client import Api
from tests.support.control_plane import noop_of
from tests.support.fake_providers import provider_declaring

LISTENERS = "/v2/lbaas/listeners"
MISSING = "00000000-0000-4000-8000-0000000f00d5"
LISTENER_KEYS = {
    "id",
    "name",
    "description",
    "provisioning_status",
    "operating_status",
    "admin_state_up",
    "protocol",
    "protocol_port",
    "connection_limit",
    "default_tls_container_ref",
    "sni_container_refs",
    "project_id",
    "tenant_id",
    "default_pool_id",
    "l7policies",
    "insert_headers",
    "created_at",
    "updated_at",
    "loadbalancers",
    "timeout_client_data",
    "timeout_member_connect",
    "timeout_member_data",
    "timeout_tcp_inspect",
    "tags",
    "client_ca_tls_container_ref",
    "client_authentication",
    "client_crl_container_ref",
    "allowed_cidrs",
    "tls_ciphers",
    "tls_versions",
    "alpn_protocols",
    "hsts_max_age",
    "hsts_include_subdomains",
    "hsts_preload",
}


def lb_status(api: Api, lb_id: str) -> str:
    body = api.get(f"/v2/lbaas/loadbalancers/{lb_id}").json()["loadbalancer"]
    return str(body["provisioning_status"])


def refused(
    api: Api,
    lb_id: str,
    call: Callable[[], Any],
    status: int,
    message: str,
    watch: str = LISTENERS,
) -> None:
    """The call fails with Octavia's body, ``watch`` is unchanged and the LB stays ACTIVE."""
    before = api.get(watch).json()
    assert_fault(call(), status, message)
    assert api.get(watch).json() == before
    assert lb_status(api, lb_id) == "ACTIVE"


def post_listener(api: Api, lb_id: str, **fields: Any) -> Any:
    body = {"loadbalancer_id": lb_id, "protocol": "HTTP", "protocol_port": 80, **fields}
    return api.post(LISTENERS, {"listener": body})


class TestListeners(ResourceTests):
    wrapper = "listener"
    # Octavia's argument path for unknown attributes.
    argument = "listener_.listener"
    collection = "listeners"
    links_key = "listeners_links"
    update_body = {
        "name": "renamed",
        "description": "new",
        "admin_state_up": False,
        "connection_limit": 100,
        "timeout_client_data": 1000,
        "insert_headers": {"X-Forwarded-For": "true"},
        "allowed_cidrs": ["192.0.2.0/24"],
    }
    create_only = ("loadbalancer_id", "protocol", "protocol_port")
    required = ("loadbalancer_id", "protocol", "protocol_port")

    def parents(self, api: Api) -> dict[str, Any]:
        return {"lb_id": api.create_lb()["id"]}

    def collection_path(self, ctx: dict[str, Any]) -> str:
        return LISTENERS

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {
            "loadbalancer_id": ctx["lb_id"],
            "protocol": "HTTP",
            "protocol_port": 8000 + n,
            "name": f"listener{n}",
        }

    # -- shape and defaults -----------------------------------------------------------

    def test_response_shape_and_defaults(self, api: Api) -> None:
        lb = api.create_lb()
        r = post_listener(api, lb["id"])
        assert r.status_code == 201, r.text
        li = r.json()["listener"]
        assert set(li) == LISTENER_KEYS
        assert li["name"] == li["description"] == ""
        assert li["operating_status"] == "OFFLINE"
        assert li["loadbalancers"] == [{"id": lb["id"]}]
        assert li["l7policies"] == [] and li["sni_container_refs"] == [] and li["tags"] == []
        assert li["insert_headers"] == {}
        assert li["allowed_cidrs"] is None
        assert li["connection_limit"] == -1
        assert (
            li["timeout_client_data"],
            li["timeout_member_connect"],
            li["timeout_member_data"],
            li["timeout_tcp_inspect"],
        ) == (50000, 5000, 50000, 0)
        assert li["client_authentication"] == "NONE"
        for key in ("tls_ciphers", "tls_versions", "alpn_protocols", "hsts_max_age"):
            assert li[key] is None, key
        for key in ("default_tls_container_ref", "client_ca_tls_container_ref"):
            assert li[key] is None, key
        assert li["hsts_include_subdomains"] is False and li["hsts_preload"] is False
        api.wait_lb(lb["id"])
        shown = api.get(f"{LISTENERS}/{li['id']}").json()["listener"]
        assert shown["provisioning_status"] == "ACTIVE"
        listed = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]
        assert listed["listeners"] == [{"id": li["id"]}]

    def test_lenient_scalars_and_ignored_project(self, api: Api) -> None:
        lb = api.create_lb()
        r = post_listener(
            api,
            lb["id"],
            protocol_port="81",
            admin_state_up="no",
            connection_limit="10",
            project_id="p-other",
            tls_versions=["TLSv1.2"],
        )
        assert r.status_code == 201, r.text
        li = r.json()["listener"]
        assert (li["protocol_port"], li["admin_state_up"], li["connection_limit"]) == (
            81,
            False,
            10,
        )
        assert li["project_id"] == "p-alpha"
        assert li["tls_versions"] is None  # TLS options only apply to TLS-offloading listeners
        api.wait_lb(lb["id"])
        refused(
            api,
            lb["id"],
            lambda: post_listener(api, lb["id"], admin_state_up="maybe"),
            400,
            "Value not an unambiguous boolean",
        )

    def test_writes_lock_the_load_balancer(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            li = post_listener(api, lb["id"]).json()["listener"]
            assert lb_status(api, lb["id"]) == "PENDING_UPDATE"
            assert li["provisioning_status"] == "PENDING_CREATE"
            assert_fault(
                post_listener(api, lb["id"], protocol_port=81),
                409,
                f"Load Balancer {lb['id']} is immutable and cannot be updated.",
            )
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])

    # -- ports ---------------------------------------------------------------------------

    def test_port_unique_per_transport(self, api: Api) -> None:
        lb = api.create_lb()
        api.create_listener(lb["id"], protocol="HTTP", protocol_port=80)
        for protocol in ("TCP", "HTTPS", "PROMETHEUS", "HTTP"):
            refused(
                api,
                lb["id"],
                lambda p=protocol: post_listener(api, lb["id"], protocol=p),
                409,
                "Another Listener on this Load Balancer is already using protocol "
                f"{protocol} and protocol_port 80",
            )
        api.create_listener(lb["id"], protocol="UDP", protocol_port=80)
        api.create_listener(lb["id"], protocol="SCTP", protocol_port=80)
        other = api.create_lb()
        api.create_listener(other["id"], protocol="TCP", protocol_port=80)

    # -- default pool ----------------------------------------------------------------------

    def test_default_pool_rules(self, api: Api) -> None:
        lb = api.create_lb()
        other = api.create_lb()
        foreign = api.create_pool(other["id"])
        tcp_pool = api.create_pool(lb["id"], protocol="TCP")
        http_pool = api.create_pool(lb["id"], protocol="HTTP")
        for pool_id in (foreign["id"], MISSING):
            refused(
                api,
                lb["id"],
                lambda p=pool_id: post_listener(api, lb["id"], default_pool_id=p),
                404,
                f"Pool {pool_id} not found.",
            )
        refused(
            api,
            lb["id"],
            lambda: post_listener(api, lb["id"], default_pool_id=tcp_pool["id"]),
            400,
            "Validation failure: The pool protocol 'TCP' is invalid while the listener "
            "protocol is 'HTTP'.",
        )
        refused(
            api,
            lb["id"],
            lambda: post_listener(
                api, lb["id"], protocol="PROMETHEUS", default_pool_id=http_pool["id"]
            ),
            400,
            "Protocol PROMETHEUS listeners cannot have child objects.",
        )
        li = api.create_listener(lb["id"], default_pool_id=http_pool["id"])
        assert li["default_pool_id"] == http_pool["id"]
        path = f"{LISTENERS}/{li['id']}"
        refused(
            api,
            lb["id"],
            lambda: api.put(path, {"listener": {"default_pool_id": tcp_pool["id"]}}),
            400,
            "The pool protocol 'TCP' is invalid",
        )
        assert api.put(path, {"listener": {"default_pool_id": None}}).status_code == 200
        api.wait_lb(lb["id"])
        assert api.get(path).json()["listener"]["default_pool_id"] is None
        tcp = api.create_listener(lb["id"], protocol="TCP", protocol_port=81)
        r = api.put(f"{LISTENERS}/{tcp['id']}", {"listener": {"default_pool_id": tcp_pool["id"]}})
        assert r.status_code == 200, r.text
        api.wait_lb(lb["id"])
        # Deleting the listener leaves its pool (pools belong to the load balancer).
        assert api.delete(f"{LISTENERS}/{tcp['id']}").status_code == 204
        api.wait_lb(lb["id"])
        assert api.get(f"/v2/lbaas/pools/{tcp_pool['id']}").status_code == 200

    # -- insert_headers ----------------------------------------------------------------------

    def test_insert_headers(self, api: Api) -> None:
        lb = api.create_lb()
        cases = [
            (
                {"protocol": "TCP", "insert_headers": {"X-Forwarded-For": "true"}},
                "insert-headers is not a valid option for a TCP protocol listener.",
            ),
            (
                {"protocol": "UDP", "insert_headers": {"X-Forwarded-For": "true"}},
                "insert-headers is not a valid option for a UDP protocol listener.",
            ),
            (
                {"insert_headers": {"X-Bad": "true"}},
                "['X-Bad'] is not a valid option for insert_headers",
            ),
            (
                {"insert_headers": {"X-SSL-Client-DN": "true", "X-Real-IP": "true"}},
                "['X-SSL-Client-DN'] is not a valid option for HTTP protocol listener.",
            ),
            ({"insert_headers": {"X-Real-IP": 1}}, "Value should be string"),
        ]
        for fields, message in cases:
            refused(api, lb["id"], lambda f=fields: post_listener(api, lb["id"], **f), 400, message)
        headers = {"X-Forwarded-For": "true", "X-Forwarded-Proto": "false"}
        li = api.create_listener(lb["id"], insert_headers=headers)
        assert li["insert_headers"] == headers
        path = f"{LISTENERS}/{li['id']}"
        refused(
            api,
            lb["id"],
            lambda: api.put(path, {"listener": {"insert_headers": {"X-SSL-Issuer": "true"}}}),
            400,
            "['X-SSL-Issuer'] is not a valid option for HTTP protocol listener.",
        )
        assert api.put(path, {"listener": {"insert_headers": None}}).status_code == 200
        api.wait_lb(lb["id"])
        assert api.get(path).json()["listener"]["insert_headers"] == {}

    # -- allowed_cidrs -------------------------------------------------------------------------

    def test_allowed_cidrs(self, api: Api) -> None:
        lb = api.create_lb()
        cidrs = ["192.0.2.5/24", "192.0.2.0/24", "10.1.2.3/8", "198.51.100.7"]
        li = api.create_listener(lb["id"], allowed_cidrs=cidrs)
        assert li["allowed_cidrs"] == ["192.0.2.0/24", "10.0.0.0/8", "198.51.100.7/32"]
        refused(
            api,
            lb["id"],
            lambda: post_listener(api, lb["id"], protocol_port=81, allowed_cidrs=["2001:db8::/32"]),
            400,
            f"Validation failure: CIDR 2001:db8::/32 IP version incompatible with all VIPs "
            f"['{lb['vip_address']}'] IP version.",
        )
        refused(
            api,
            lb["id"],
            lambda: post_listener(api, lb["id"], protocol_port=81, allowed_cidrs=["nope"]),
            400,
            "Invalid input for field/attribute allowed_cidrs. Value: 'nope'.",
        )
        path = f"{LISTENERS}/{li['id']}"
        refused(
            api,
            lb["id"],
            lambda: api.put(path, {"listener": {"allowed_cidrs": ["::/0"]}}),
            400,
            "IP version incompatible",
        )
        for cleared in ([], None):
            assert api.put(path, {"listener": {"allowed_cidrs": cleared}}).status_code == 200
            api.wait_lb(lb["id"])
            assert api.get(path).json()["listener"]["allowed_cidrs"] is None
            api.put(path, {"listener": {"allowed_cidrs": ["192.0.2.0/24"]}})
            api.wait_lb(lb["id"])

    # -- TLS and HSTS ---------------------------------------------------------------------------

    def test_tls_rules_and_unfetchable_certificates(self, api: Api) -> None:
        lb = api.create_lb()
        ref = "https://keys.example/v1/containers/one"
        sni = "https://keys.example/v1/containers/two"
        ca = "https://keys.example/v1/secrets/ca"
        tls = {"protocol": "TERMINATED_HTTPS", "protocol_port": 443}
        cases: list[tuple[dict[str, Any], str]] = [
            (
                tls,
                "Validation failure: An SNI or default certificate container reference must "
                "be provided for TERMINATED_HTTPS protocol listeners.",
            ),
            (
                {**tls, "default_tls_container_ref": ref},
                f"Could not retrieve certificate: ['{ref}']",
            ),
            (
                {**tls, "default_tls_container_ref": ref, "sni_container_refs": [sni]},
                f"Could not retrieve certificate: ['{sni}', '{ref}']",
            ),
            (
                {"protocol": "PROMETHEUS", "sni_container_refs": [sni]},
                "Could not retrieve certificate",
            ),
            (
                {"default_tls_container_ref": ref},
                "Certificate container references are not allowed on HTTP protocol listeners.",
            ),
            (
                {"protocol": "UDP", "default_tls_container_ref": ref},
                "Validation failure: UDP protocol listener does not support TLS.",
            ),
            (
                {"protocol": "SCTP", "sni_container_refs": [sni]},
                "SCTP protocol listener does not support TLS.",
            ),
            (
                {"client_authentication": "MANDATORY"},
                "Client authentication setting MANDATORY requires a client CA container reference.",
            ),
            (
                {**tls, "client_ca_tls_container_ref": ca},
                "must be provided with a client CA container reference",
            ),
            (
                {**tls, "default_tls_container_ref": ref, "client_crl_container_ref": ca},
                "A client CA container reference is required",
            ),
            ({**tls, "sni_container_refs": [sni], "tls_versions": []}, "Empty TLS version list"),
            (
                {**tls, "sni_container_refs": [sni], "tls_versions": ["TLSv1.2", "TLSv9"]},
                "Invalid TLS versions: TLSv9",
            ),
            ({**tls, "sni_container_refs": [sni], "alpn_protocols": []}, "Empty ALPN"),
            ({**tls, "sni_container_refs": [sni], "alpn_protocols": ["h3"]}, "Invalid ALPN"),
            ({**tls, "sni_container_refs": [sni], "tls_ciphers": "AES 128"}, "tls_ciphers"),
            ({"client_authentication": "SOMETIMES"}, "Value should be one of"),
            ({"protocol": "TLS"}, "Invalid input for field/attribute protocol."),
        ]
        for fields, message in cases:
            refused(api, lb["id"], lambda f=fields: post_listener(api, lb["id"], **f), 400, message)
        li = api.create_listener(lb["id"])
        path = f"{LISTENERS}/{li['id']}"
        for fields, message in [
            ({"sni_container_refs": [sni]}, "Certificate container references are not allowed"),
            ({"client_authentication": "OPTIONAL"}, "requires a client CA container reference"),
        ]:
            refused(api, lb["id"], lambda f=fields: api.put(path, {"listener": f}), 400, message)
        for fields in ({"sni_container_refs": None}, {"default_tls_container_ref": None}):
            assert api.put(path, {"listener": fields}).status_code == 200
            api.wait_lb(lb["id"])

    def test_hsts_rules(self, api: Api) -> None:
        lb = api.create_lb()
        for fields, message in [
            ({"hsts_max_age": 3600}, "HSTS can only be configured on TERMINATED_HTTPS"),
            ({"hsts_preload": True}, "require hsts_max_age"),
            ({"hsts_include_subdomains": "yes"}, "require hsts_max_age"),
            ({"hsts_max_age": -1}, "Value should be greater or equal to 0"),
        ]:
            refused(api, lb["id"], lambda f=fields: post_listener(api, lb["id"], **f), 400, message)
        li = api.create_listener(lb["id"], hsts_preload=None)
        assert li["hsts_preload"] is False
        path = f"{LISTENERS}/{li['id']}"
        refused(
            api,
            lb["id"],
            lambda: api.put(path, {"listener": {"hsts_include_subdomains": True}}),
            400,
            "require hsts_max_age",
        )

    # -- ranges and PUT null semantics ---------------------------------------------------------------

    def test_ranges_and_null_resets(self, api: Api) -> None:
        lb = api.create_lb()
        for fields, message in [
            ({"connection_limit": -2}, "connection_limit. Value: '-2'. Value should be greater"),
            ({"timeout_client_data": -1}, "timeout_client_data. Value: '-1'."),
            ({"timeout_tcp_inspect": 2073600001}, "Value should be lower or equal to 2073600000"),
            ({"protocol_port": 0}, "protocol_port. Value: '0'."),
            ({"protocol_port": 65536}, "protocol_port. Value: '65536'."),
            ({"name": "x" * 256}, "maximum character requirement of 255"),
            ({"loadbalancer_id": "nope"}, "Value should be UUID format"),
        ]:
            refused(api, lb["id"], lambda f=fields: post_listener(api, lb["id"], **f), 400, message)
        refused(
            api,
            lb["id"],
            lambda: post_listener(api, MISSING),
            404,
            f"Load Balancer {MISSING} not found.",
        )
        li = api.create_listener(
            lb["id"],
            name="n",
            connection_limit=5,
            timeout_client_data=1,
            timeout_member_connect=2,
            timeout_member_data=3,
            timeout_tcp_inspect=2073600000,
            tags=["a"],
        )
        path = f"{LISTENERS}/{li['id']}"
        nulls = {
            "name": None,
            "connection_limit": None,
            "timeout_client_data": None,
            "timeout_member_connect": None,
            "timeout_member_data": None,
            "timeout_tcp_inspect": None,
            "admin_state_up": None,
            "client_authentication": None,
            "tags": None,
        }
        assert api.put(path, {"listener": nulls}).status_code == 200
        api.wait_lb(lb["id"])
        shown = api.get(path).json()["listener"]
        assert shown["name"] == "" and shown["connection_limit"] == -1
        assert (
            shown["timeout_client_data"],
            shown["timeout_member_connect"],
            shown["timeout_member_data"],
            shown["timeout_tcp_inspect"],
        ) == (50000, 5000, 50000, 0)
        assert shown["admin_state_up"] is False and shown["client_authentication"] == "NONE"
        assert shown["tags"] == ["a"]
        assert api.put(path, {"listener": {"tags": []}}).status_code == 200
        api.wait_lb(lb["id"])
        assert api.get(path).json()["listener"]["tags"] == []

    # -- standalone POST refuses graph-only parts ------------------------------------------------------

    def test_graph_only_fields_refused(self, api: Api) -> None:
        lb = api.create_lb()
        refused(
            api,
            lb["id"],
            lambda: post_listener(api, lb["id"], l7policies=[{"action": "REJECT"}]),
            400,
            "fully populated load balancer",
        )
        r = post_listener(api, lb["id"], l7policies=[], default_pool=None)
        assert r.status_code == 201, r.text
        api.wait_lb(lb["id"])

    # -- delete cascades to L7 ---------------------------------------------------------------------------

    def test_delete_removes_policies_and_rules(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        li = api.create_listener(lb["id"])
        policy = api.create_l7policy(lb["id"], li["id"])
        rule = api.create_l7rule(lb["id"], policy["id"])
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            assert api.delete(f"{LISTENERS}/{li['id']}").status_code == 204
            shown = api.get(f"/v2/lbaas/l7policies/{policy['id']}").json()["l7policy"]
            assert shown["provisioning_status"] == "PENDING_DELETE"
            rule_path = f"/v2/lbaas/l7policies/{policy['id']}/rules/{rule['id']}"
            assert api.get(rule_path).json()["rule"]["provisioning_status"] == "PENDING_DELETE"
            assert lb_status(api, lb["id"]) == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])
        assert_fault(api.get(f"{LISTENERS}/{li['id']}"), 404, f"Listener {li['id']} not found.")
        assert_fault(api.get(f"/v2/lbaas/l7policies/{policy['id']}"), 404, "not found")
        assert api.get("/v2/lbaas/l7policies").json()["l7policies"] == []

    # -- stats ----------------------------------------------------------------------------------------------

    def test_stats(self, api: Api) -> None:
        lb = api.create_lb()
        li = api.create_listener(lb["id"])
        r = api.get(f"{LISTENERS}/{li['id']}/stats")
        assert r.status_code == 200
        assert r.json() == {
            "stats": {
                "bytes_in": 0,
                "bytes_out": 0,
                "active_connections": 0,
                "total_connections": 0,
                "request_errors": 0,
            }
        }
        assert_fault(api.get(f"{LISTENERS}/{MISSING}/stats"), 404, "Listener")
        assert_fault(api.as_("p-beta", "member").get(f"{LISTENERS}/{li['id']}/stats"), 403)
        assert api.as_("p-alpha", "reader").get(f"{LISTENERS}/{li['id']}/stats").status_code == 200

    # -- filters ------------------------------------------------------------------------------------------------

    def test_filters(self, api: Api) -> None:
        lb = api.create_lb()
        other = api.create_lb()
        a = api.create_listener(lb["id"], protocol="TCP", protocol_port=81, connection_limit=7)
        b = api.create_listener(lb["id"], admin_state_up=False)
        c = api.create_listener(other["id"], protocol="UDP", protocol_port=53)

        def ids(**params: Any) -> list[str]:
            return [o["id"] for o in api.get(LISTENERS, params=params).json()["listeners"]]

        assert ids(protocol="TCP") == [a["id"]]
        assert ids(protocol_port="81") == [a["id"]]
        assert ids(connection_limit=7) == [a["id"]]
        assert ids(admin_state_up="off") == [b["id"]]
        assert ids(admin_state_up="True") == [a["id"], c["id"]]
        assert ids(loadbalancer_id=lb["id"]) == [a["id"], b["id"]]
        assert ids(tenant_id="p-alpha") == [a["id"], b["id"], c["id"]]
        assert ids(hsts_preload="false", timeout_tcp_inspect=0) == [a["id"], b["id"], c["id"]]
        assert ids(sort="protocol_port:desc") == [a["id"], b["id"], c["id"]]
        assert ids(sort="protocol_port:asc") == [c["id"], b["id"], a["id"]]
        refused(
            api,
            lb["id"],
            lambda: api.get(LISTENERS, params={"protocol_port": "eighty"}),
            400,
            "One or more arguments are either duplicate or invalid",
        )

    # -- provider capabilities ----------------------------------------------------------------------------------

    def test_provider_capability_refusal(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        with provider_declaring(plane, listener_protocols=frozenset({"HTTP", "TCP"})):
            refused(
                api,
                lb["id"],
                lambda: post_listener(api, lb["id"], protocol="UDP"),
                400,
                "Provider 'noop' does not support a requested option: protocol UDP",
            )
            api.create_listener(lb["id"], protocol="TCP")

    def test_allowed_cidrs_a_provider_cannot_enforce_are_refused(
        self, api: Api, plane: Any
    ) -> None:
        lb = api.create_lb()
        plain = api.create_listener(lb["id"], protocol="TCP", protocol_port=81)
        why = (
            "Provider 'noop' does not support a requested option: allowed_cidrs on TCP "
            "listeners (its data plane cannot drop the other sources, so the restriction "
            "would not be enforced)"
        )
        cidrs = {"allowed_cidrs": ["10.1.0.0/16"]}
        with provider_declaring(plane, allowed_cidrs_protocols=frozenset({"HTTP"})):
            refused(
                api,
                lb["id"],
                lambda: post_listener(api, lb["id"], protocol="TCP", **cidrs),
                400,
                why,
            )
            path = f"{LISTENERS}/{plain['id']}"
            refused(api, lb["id"], lambda: api.put(path, {"listener": cidrs}), 400, why)
            # Without networks, or on a protocol it filters, the same provider takes them.
            api.create_listener(lb["id"], protocol="TCP", protocol_port=82, allowed_cidrs=[])
            api.create_listener(lb["id"], protocol="HTTP", protocol_port=83, **cidrs)


class TestListenerQuota:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"quota": {"listener": 1}}

    def test_quota(self, api: Api) -> None:
        lb = api.create_lb()
        api.create_listener(lb["id"])
        refused(
            api,
            lb["id"],
            lambda: post_listener(api, lb["id"], protocol_port=81),
            403,
            "Quota has been met for resources: Listener",
        )
