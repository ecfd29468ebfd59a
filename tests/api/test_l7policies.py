"""L7 policy API: the shared CRUD tests plus actions, redirects, positions and locking."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.resource_base import ResourceTests, assert_fault
from tests.api.test_listeners import lb_status, refused
from tests.support.api_client import Api
from tests.support.control_plane import noop_of
from tests.support.fake_providers import provider_declaring

POLICIES = "/v2/lbaas/l7policies"
MISSING = "00000000-0000-4000-8000-00000000a7a7"
URL = "https://www.example.com/moved"
POLICY_KEYS = {
    "id",
    "name",
    "description",
    "provisioning_status",
    "operating_status",
    "admin_state_up",
    "project_id",
    "tenant_id",
    "action",
    "listener_id",
    "redirect_pool_id",
    "redirect_url",
    "redirect_prefix",
    "redirect_http_code",
    "position",
    "rules",
    "created_at",
    "updated_at",
    "tags",
}


def post_policy(api: Api, listener_id: str, **fields: Any) -> Any:
    return api.post(POLICIES, {"l7policy": {"listener_id": listener_id, **fields}})


def tree(api: Api) -> dict[str, Any]:
    """An LB with an HTTP listener (and nothing else yet)."""
    lb = api.create_lb()
    listener = api.create_listener(lb["id"])
    return {"lb_id": lb["id"], "listener_id": listener["id"], "lb": lb}


def order_of(api: Api, listener_id: str) -> list[tuple[str, int]]:
    listed = api.get(POLICIES, params={"listener_id": listener_id, "sort": "position"}).json()
    return [(p["name"], p["position"]) for p in listed["l7policies"]]


class TestL7Policies(ResourceTests):
    wrapper = "l7policy"
    # Octavia's argument path for unknown attributes.
    argument = "l7policy_.l7policy"
    collection = "l7policies"
    links_key = "l7policies_links"
    update_body = {
        "name": "renamed",
        "description": "new",
        "admin_state_up": False,
        "action": "REDIRECT_TO_URL",
        "redirect_url": URL,
        "redirect_http_code": 301,
    }
    create_only = ("listener_id",)
    required = ("listener_id", "action")

    def parents(self, api: Api) -> dict[str, Any]:
        return tree(api)

    def collection_path(self, ctx: dict[str, Any]) -> str:
        return POLICIES

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {"listener_id": ctx["listener_id"], "action": "REJECT", "name": f"policy{n}"}

    def test_response_shape_and_locking(self, api: Api, plane: Any) -> None:
        ctx = tree(api)
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            r = post_policy(api, ctx["listener_id"], action="REJECT")
            assert r.status_code == 201, r.text
            policy = r.json()["l7policy"]
            assert set(policy) == POLICY_KEYS
            assert policy["provisioning_status"] == "PENDING_CREATE"
            assert policy["operating_status"] == "OFFLINE"
            assert (policy["name"], policy["description"], policy["position"]) == ("", "", 1)
            assert policy["rules"] == [] and policy["tags"] == []
            for key in (
                "redirect_pool_id",
                "redirect_url",
                "redirect_prefix",
                "redirect_http_code",
            ):
                assert policy[key] is None, key
            assert lb_status(api, ctx["lb_id"]) == "PENDING_UPDATE"
            listener = api.get(f"/v2/lbaas/listeners/{ctx['listener_id']}").json()["listener"]
            assert listener["provisioning_status"] == "PENDING_UPDATE"
            assert listener["l7policies"] == [{"id": policy["id"]}]
            assert_fault(
                post_policy(api, ctx["listener_id"], action="REJECT"),
                409,
                f"Load Balancer {ctx['lb_id']} is immutable and cannot be updated.",
            )
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(ctx["lb_id"])
        shown = api.get(f"/v2/lbaas/listeners/{ctx['listener_id']}").json()["listener"]
        assert shown["provisioning_status"] == "ACTIVE"

    def test_missing_parents_and_prometheus(self, api: Api) -> None:
        ctx = tree(api)
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(api, MISSING, action="REJECT"),
            404,
            f"Listener {MISSING} not found.",
            POLICIES,
        )
        assert_fault(api.get(f"{POLICIES}/{MISSING}"), 404, f"L7 Policy {MISSING} not found.")
        prom = api.create_listener(ctx["lb_id"], protocol="PROMETHEUS", protocol_port=9100)
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(api, prom["id"], action="REJECT"),
            400,
            "Protocol PROMETHEUS listeners cannot have child objects.",
            POLICIES,
        )

    def test_action_rules_on_create(self, api: Api) -> None:
        ctx = tree(api)
        pool = api.create_pool(ctx["lb_id"])
        cases: list[tuple[dict[str, Any], str]] = [
            (
                {"action": "REDIRECT_TO_URL"},
                "Invalid L7 Policy arguments: redirect_url must not be None",
            ),
            (
                {"action": "REDIRECT_PREFIX", "redirect_url": URL},
                "Invalid L7 Policy arguments: redirect_prefix must not be None",
            ),
            (
                {"action": "REDIRECT_TO_POOL"},
                "Invalid L7 Policy arguments: redirect_pool_id or redirect_pool must not be None",
            ),
            (
                {"action": "REDIRECT_TO_POOL", "redirect_pool_id": pool["id"], "redirect_url": URL},
                "Invalid L7 Policy arguments: Cannot specify redirect_pool_id and redirect_url "
                "or redirect_prefix at the same time",
            ),
            ({"action": "REDIRECT_SOMEWHERE"}, "Invalid input for field/attribute action."),
            (
                {"action": "REDIRECT_TO_URL", "redirect_url": URL, "redirect_http_code": 300},
                "Value should be one of: 301, 302, 303, 307, 308",
            ),
            ({"action": "REDIRECT_TO_URL", "redirect_url": "ftp://x.example/"}, "redirect_url"),
            ({"action": "REDIRECT_TO_URL", "redirect_url": "/relative"}, "redirect_url"),
            ({"action": "REDIRECT_TO_URL", "redirect_url": "http://a b/"}, "redirect_url"),
            ({"action": "REDIRECT_PREFIX", "redirect_prefix": "https://"}, "redirect_prefix"),
            ({"action": "REJECT", "position": 0}, "position. Value: '0'."),
            ({"action": "REJECT", "redirect_pool_id": "nope"}, "Value should be UUID format"),
        ]
        for fields, message in cases:
            refused(
                api,
                ctx["lb_id"],
                lambda f=fields: post_policy(api, ctx["listener_id"], **f),
                400,
                message,
                POLICIES,
            )

    def test_redirect_fields_and_codes(self, api: Api) -> None:
        ctx = tree(api)
        pool = api.create_pool(ctx["lb_id"])

        def made(**fields: Any) -> dict[str, Any]:
            r = post_policy(api, ctx["listener_id"], **fields)
            assert r.status_code == 201, r.text
            api.wait_lb(ctx["lb_id"])
            return dict(r.json()["l7policy"])

        url = made(action="REDIRECT_TO_URL", redirect_url=URL)
        assert (url["action"], url["redirect_url"], url["redirect_http_code"]) == (
            "REDIRECT_TO_URL",
            URL,
            302,
        )
        prefix = made(action="REDIRECT_PREFIX", redirect_prefix=URL, redirect_http_code="308")
        assert (prefix["redirect_prefix"], prefix["redirect_http_code"]) == (URL, 308)
        assert prefix["redirect_url"] is None
        to_pool = made(
            action="REDIRECT_TO_POOL", redirect_pool_id=pool["id"], redirect_http_code=301
        )
        assert (to_pool["redirect_pool_id"], to_pool["redirect_http_code"]) == (pool["id"], None)
        reject = made(action="REJECT", redirect_url=URL, redirect_http_code=301)
        assert (reject["action"], reject["redirect_url"], reject["redirect_http_code"]) == (
            "REJECT",
            None,
            None,
        )
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(
                api,
                ctx["listener_id"],
                action="REDIRECT_TO_URL",
                redirect_url=URL,
                redirect_prefix=URL,
            ),
            400,
            "Cannot specify redirect_url and redirect_prefix at the same time",
            POLICIES,
        )

    def test_put_action_rules(self, api: Api) -> None:
        ctx = tree(api)
        pool = api.create_pool(ctx["lb_id"])
        policy = api.create_l7policy(ctx["lb_id"], ctx["listener_id"])
        path = f"{POLICIES}/{policy['id']}"

        def put(**fields: Any) -> dict[str, Any]:
            r = api.put(path, {"l7policy": fields})
            assert r.status_code == 200, r.text
            api.wait_lb(ctx["lb_id"])
            return dict(api.get(path).json()["l7policy"])

        for fields, message in [
            ({}, "Invalid L7 Policy arguments: Invalid update options"),
            ({"action": "REDIRECT_TO_URL"}, "redirect_url must not be None"),
            ({"action": None}, "Invalid L7 Policy action specified: None"),
            ({"redirect_pool_id": MISSING}, f"Pool {MISSING} not found."),
        ]:
            status = 404 if "not found" in message else 400
            refused(
                api,
                ctx["lb_id"],
                lambda f=fields: api.put(path, {"l7policy": f}),
                status,
                message,
                POLICIES,
            )
        shown = put(redirect_url=URL)
        assert (shown["action"], shown["redirect_http_code"]) == ("REDIRECT_TO_URL", 302)
        shown = put(redirect_http_code=307)
        assert (shown["redirect_url"], shown["redirect_http_code"]) == (URL, 307)
        shown = put(redirect_url=URL + "/2")
        assert shown["redirect_http_code"] == 307  # the code is kept when only the URL moves
        refused(
            api,
            ctx["lb_id"],
            lambda: api.put(path, {"l7policy": {"redirect_url": None}}),
            400,
            "redirect_url must not be None",
            POLICIES,
        )
        shown = put(redirect_pool_id=pool["id"])
        assert shown["action"] == "REDIRECT_TO_POOL"
        assert (shown["redirect_url"], shown["redirect_http_code"]) == (None, None)
        shown = put(action="REDIRECT_PREFIX", redirect_prefix=URL)
        assert (shown["redirect_pool_id"], shown["redirect_prefix"]) == (None, URL)
        assert shown["redirect_http_code"] == 302
        shown = put(action="REJECT")
        assert [shown[k] for k in ("redirect_prefix", "redirect_http_code")] == [None, None]
        shown = put(name=None, admin_state_up=None)
        assert (shown["name"], shown["admin_state_up"]) == ("", False)

    def test_redirect_pool_must_fit(self, api: Api) -> None:
        ctx = tree(api)
        other = api.create_lb()
        foreign = api.create_pool(other["id"])
        tcp = api.create_pool(ctx["lb_id"], protocol="TCP")
        proxy = api.create_pool(ctx["lb_id"], protocol="PROXY")
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(
                api, ctx["listener_id"], action="REDIRECT_TO_POOL", redirect_pool_id=foreign["id"]
            ),
            404,
            f"Pool {foreign['id']} not found.",
            POLICIES,
        )
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(
                api, ctx["listener_id"], action="REDIRECT_TO_POOL", redirect_pool_id=tcp["id"]
            ),
            400,
            "Validation failure: The pool protocol 'TCP' is invalid while the listener "
            "protocol is 'HTTP'.",
            POLICIES,
        )
        policy = api.create_l7policy(
            ctx["lb_id"],
            ctx["listener_id"],
            action="REDIRECT_TO_POOL",
            redirect_pool_id=proxy["id"],
        )
        refused(
            api,
            ctx["lb_id"],
            lambda: api.put(
                f"{POLICIES}/{policy['id']}", {"l7policy": {"redirect_pool_id": tcp["id"]}}
            ),
            400,
            "The pool protocol 'TCP' is invalid",
            POLICIES,
        )

    def test_positions_stay_dense(self, api: Api) -> None:
        ctx = tree(api)
        lid = ctx["listener_id"]
        for name in ("a", "b", "c"):
            api.create_l7policy(ctx["lb_id"], lid, name=name)
        assert order_of(api, lid) == [("a", 1), ("b", 2), ("c", 3)]
        first = api.create_l7policy(ctx["lb_id"], lid, name="first", position=1)
        assert first["position"] == 1
        assert order_of(api, lid) == [("first", 1), ("a", 2), ("b", 3), ("c", 4)]
        far = api.create_l7policy(ctx["lb_id"], lid, name="far", position=99)
        assert far["position"] == 5
        mid = api.create_l7policy(ctx["lb_id"], lid, name="mid", position=3)
        assert order_of(api, lid) == [
            ("first", 1),
            ("a", 2),
            ("mid", 3),
            ("b", 4),
            ("c", 5),
            ("far", 6),
        ]
        assert api.put(f"{POLICIES}/{far['id']}", {"l7policy": {"position": 2}}).status_code == 200
        api.wait_lb(ctx["lb_id"])
        assert [n for n, _ in order_of(api, lid)] == ["first", "far", "a", "mid", "b", "c"]
        assert (
            api.put(f"{POLICIES}/{first['id']}", {"l7policy": {"position": 50}}).status_code == 200
        )
        api.wait_lb(ctx["lb_id"])
        assert [n for n, _ in order_of(api, lid)] == ["far", "a", "mid", "b", "c", "first"]
        assert api.delete(f"{POLICIES}/{mid['id']}").status_code == 204
        api.wait_lb(ctx["lb_id"])
        assert order_of(api, lid) == [("far", 1), ("a", 2), ("b", 3), ("c", 4), ("first", 5)]
        listener = api.get(f"/v2/lbaas/listeners/{lid}").json()["listener"]
        by_position = [
            p["id"] for p in api.get(POLICIES, params={"sort": "position"}).json()["l7policies"]
        ]
        assert [p["id"] for p in listener["l7policies"]] == by_position

    def test_inline_rules_and_delete_cascade(self, api: Api, plane: Any) -> None:
        ctx = tree(api)
        rules = [
            {"type": "PATH", "compare_type": "STARTS_WITH", "value": "/api"},
            {"type": "HEADER", "compare_type": "EQUAL_TO", "key": "X-Env", "value": "prod"},
        ]
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(
                api, ctx["listener_id"], action="REJECT", rules=[{**rules[1], "key": None}]
            ),
            400,
            "Error parsing L7Rule: Invalid L7 Rule: L7 rule type requires a key",
            POLICIES,
        )
        policy = api.create_l7policy(ctx["lb_id"], ctx["listener_id"], rules=rules)
        assert len(policy["rules"]) == 2
        listed = api.get(f"{POLICIES}/{policy['id']}/rules").json()["rules"]
        assert [r["id"] for r in listed] == [r["id"] for r in policy["rules"]]
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            assert api.delete(f"{POLICIES}/{policy['id']}").status_code == 204
            rule_path = f"{POLICIES}/{policy['id']}/rules/{listed[0]['id']}"
            assert api.get(rule_path).json()["rule"]["provisioning_status"] == "PENDING_DELETE"
            listener = api.get(f"/v2/lbaas/listeners/{ctx['listener_id']}").json()["listener"]
            assert listener["provisioning_status"] == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(ctx["lb_id"])
        assert_fault(api.get(f"{POLICIES}/{policy['id']}"), 404, "L7 Policy")
        assert_fault(api.get(f"{POLICIES}/{policy['id']}/rules"), 404, "L7Policy")

    def test_filters(self, api: Api) -> None:
        ctx = tree(api)
        a = api.create_l7policy(
            ctx["lb_id"], ctx["listener_id"], action="REDIRECT_TO_URL", redirect_url=URL
        )
        b = api.create_l7policy(ctx["lb_id"], ctx["listener_id"], admin_state_up=False)

        def ids(**params: Any) -> list[str]:
            return [p["id"] for p in api.get(POLICIES, params=params).json()["l7policies"]]

        assert ids(action="REJECT") == [b["id"]]
        assert ids(position=1) == [a["id"]]
        assert ids(redirect_http_code="302") == [a["id"]]
        assert ids(redirect_url=URL) == [a["id"]]
        assert ids(admin_state_up="f") == [b["id"]]
        assert ids(listener_id=ctx["listener_id"], sort="position:desc") == [b["id"], a["id"]]

    def test_provider_capability_refusal(self, api: Api, plane: Any) -> None:
        ctx = tree(api)
        with provider_declaring(plane, l7_actions=frozenset({"REJECT"})):
            refused(
                api,
                ctx["lb_id"],
                lambda: post_policy(
                    api, ctx["listener_id"], action="REDIRECT_PREFIX", redirect_prefix=URL
                ),
                400,
                "Provider 'noop' does not support a requested option: L7 policy action "
                "REDIRECT_PREFIX",
                POLICIES,
            )
            api.create_l7policy(ctx["lb_id"], ctx["listener_id"])

    def test_a_provider_may_keep_l7_policies_to_http_listeners(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        tcp = api.create_listener(lb["id"], protocol="TCP", protocol_port=8443)
        http = api.create_listener(lb["id"], protocol="HTTP", protocol_port=8080)
        only_http = frozenset({"HTTP", "TERMINATED_HTTPS"})
        with provider_declaring(plane, l7_listener_protocols=only_http):
            refused(
                api,
                lb["id"],
                lambda: post_policy(api, tcp["id"], action="REJECT"),
                400,
                "Provider 'noop' does not support a requested option: L7 policies on listener "
                "protocol TCP",
                POLICIES,
            )
            api.create_l7policy(lb["id"], http["id"])


class TestL7PolicyQuota:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"quota": {"l7policy": 1, "l7rule": 1}}

    def test_quota(self, api: Api) -> None:
        ctx = tree(api)
        rule = {"type": "PATH", "compare_type": "STARTS_WITH", "value": "/a"}
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(api, ctx["listener_id"], action="REJECT", rules=[rule, rule]),
            403,
            "Quota has been met for resources: L7 Rule",
            POLICIES,
        )
        api.create_l7policy(ctx["lb_id"], ctx["listener_id"])
        refused(
            api,
            ctx["lb_id"],
            lambda: post_policy(api, ctx["listener_id"], action="REJECT"),
            403,
            "Quota has been met for resources: L7 Policy",
            POLICIES,
        )
