"""L7 rule API: the shared CRUD tests plus the validity matrix, the 50-rule cap and locking.

The full type × compare × key × value matrix is unit-tested in
``tests/unit/api/test_l7_validation.py``; here each kind of refusal is checked once
through HTTP, with Octavia's error body and nothing changed.
"""

from __future__ import annotations

from typing import Any

import pytest

from lbaas.db.tables import L7PolicyRow
from tests.api.resource_base import ResourceTests, assert_fault
from tests.api.test_listeners import lb_status, refused
from tests.support.api_client import Api
from tests.support.control_plane import noop_of
from tests.support.fake_providers import provider_declaring

MISSING = "00000000-0000-4000-8000-0000000001e5"
RULE_KEYS = {
    "id",
    "type",
    "compare_type",
    "key",
    "value",
    "invert",
    "provisioning_status",
    "operating_status",
    "created_at",
    "updated_at",
    "project_id",
    "tenant_id",
    "admin_state_up",
    "tags",
}


def tree(api: Api) -> dict[str, Any]:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"])
    policy = api.create_l7policy(lb["id"], listener["id"])
    return {"lb_id": lb["id"], "listener_id": listener["id"], "policy_id": policy["id"]}


def rules_path(policy_id: str) -> str:
    return f"/v2/lbaas/l7policies/{policy_id}/rules"


def post_rule(api: Api, policy_id: str, **fields: Any) -> Any:
    return api.post(rules_path(policy_id), {"rule": fields})


class TestL7Rules(ResourceTests):
    wrapper = "rule"
    # Octavia's argument path for unknown attributes.
    argument = "rule_.rule"
    collection = "rules"
    links_key = "rules_links"
    update_body = {
        "compare_type": "EQUAL_TO",
        "value": "/other",
        "invert": True,
        "admin_state_up": False,
    }
    create_only = ("project_id",)
    required = ("type", "compare_type", "value")
    name_field = None

    def parents(self, api: Api) -> dict[str, Any]:
        return tree(api)

    def collection_path(self, ctx: dict[str, Any]) -> str:
        return rules_path(ctx["policy_id"])

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {"type": "PATH", "compare_type": "STARTS_WITH", "value": f"/api{n}"}

    def test_response_shape_and_locking(self, api: Api, plane: Any) -> None:
        ctx = tree(api)
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            r = post_rule(
                api,
                ctx["policy_id"],
                type="HOST_NAME",
                compare_type="ENDS_WITH",
                value=".example.com",
            )
            assert r.status_code == 201, r.text
            assert list(r.json()) == ["rule"]
            rule = r.json()["rule"]
            assert set(rule) == RULE_KEYS
            assert (rule["provisioning_status"], rule["operating_status"]) == (
                "PENDING_CREATE",
                "OFFLINE",
            )
            assert (rule["key"], rule["invert"], rule["admin_state_up"]) == (None, False, True)
            assert lb_status(api, ctx["lb_id"]) == "PENDING_UPDATE"
            for path in (
                f"/v2/lbaas/listeners/{ctx['listener_id']}",
                f"/v2/lbaas/l7policies/{ctx['policy_id']}",
            ):
                body = api.get(path).json()
                assert next(iter(body.values()))["provisioning_status"] == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(ctx["lb_id"])
        policy = api.get(f"/v2/lbaas/l7policies/{ctx['policy_id']}").json()["l7policy"]
        assert policy["rules"] == [{"id": rule["id"]}]
        assert policy["provisioning_status"] == "ACTIVE"

    def test_policy_must_be_active(self, api: Api, plane: Any) -> None:
        ctx = tree(api)
        rule = api.create_l7rule(ctx["lb_id"], ctx["policy_id"])
        with plane.database.write() as session:
            session.get(L7PolicyRow, ctx["policy_id"]).provisioning_status = "ERROR"
        message = f"L7Policy {ctx['policy_id']} is immutable and cannot be updated."
        path = f"{rules_path(ctx['policy_id'])}/{rule['id']}"
        watch = rules_path(ctx["policy_id"])
        refused(
            api,
            ctx["lb_id"],
            lambda: post_rule(api, ctx["policy_id"], **self.body(ctx, 1)),
            409,
            message,
            watch,
        )
        refused(
            api, ctx["lb_id"], lambda: api.put(path, {"rule": {"value": "/x"}}), 409, message, watch
        )
        refused(api, ctx["lb_id"], lambda: api.delete(path), 409, message, watch)

    def test_unknown_parents(self, api: Api) -> None:
        ctx = tree(api)
        for call in (
            lambda: api.get(rules_path(MISSING)),
            lambda: post_rule(api, MISSING, **self.body(ctx, 0)),
            lambda: api.get(f"{rules_path(MISSING)}/{MISSING}"),
        ):
            assert_fault(call(), 404, f"L7Policy {MISSING} not found.")
        other = api.create_l7policy(ctx["lb_id"], ctx["listener_id"])
        rule = api.create_l7rule(ctx["lb_id"], other["id"])
        elsewhere = f"{rules_path(ctx['policy_id'])}/{rule['id']}"
        assert_fault(api.get(elsewhere), 404, f"L7 Rule {rule['id']} not found.")
        assert_fault(api.delete(elsewhere), 404, "L7 Rule")

    def test_validity_matrix_refusals(self, api: Api) -> None:
        ctx = tree(api)
        prefix = "Error parsing L7Rule: Invalid L7 Rule: "
        cases: list[tuple[dict[str, Any], str]] = [
            (
                {"type": "HEADER", "compare_type": "EQUAL_TO", "value": "v"},
                "L7 rule type requires a key",
            ),
            (
                {"type": "COOKIE", "compare_type": "EQUAL_TO", "key": "a b", "value": "v"},
                "Invalid characters in key",
            ),
            (
                {"type": "FILE_TYPE", "compare_type": "CONTAINS", "value": "jpg"},
                "invalid comparison type for rule type",
            ),
            (
                {
                    "type": "SSL_CONN_HAS_CERT",
                    "compare_type": "EQUAL_TO",
                    "key": "k",
                    "value": "true",
                },
                'L7rule type SSL_CONN_HAS_CERT does not use the "key" field.',
            ),
            (
                {"type": "SSL_VERIFY_RESULT", "compare_type": "EQUAL_TO", "value": "-1"},
                "L7rule type SSL_VERIFY_RESULT needs a non-negative integer value.",
            ),
            (
                {"type": "PATH", "compare_type": "REGEX", "value": "(unclosed"},
                "Unable to parse regular expression",
            ),
            (
                {"type": "PATH", "compare_type": "EQUAL_TO", "value": "/a b"},
                "Invalid characters in value",
            ),
            (
                {"type": "PATH", "compare_type": "EQUAL_TO", "value": "/a\r\nX: y"},
                "Invalid characters in value",
            ),
            (
                {"type": "SSL_DN_FIELD", "compare_type": "EQUAL_TO", "key": "1CN", "value": "x"},
                "Invalid characters in key",
            ),
        ]
        watch = rules_path(ctx["policy_id"])
        for fields, reason in cases:
            refused(
                api,
                ctx["lb_id"],
                lambda f=fields: post_rule(api, ctx["policy_id"], **f),
                400,
                prefix + reason,
                watch,
            )
        for fields, message in [
            (
                {"type": "URL", "compare_type": "EQUAL_TO", "value": "v"},
                "Invalid input for field/attribute type.",
            ),
            (
                {"type": "PATH", "compare_type": "EQUAL_TO", "value": "v" * 256},
                "maximum character requirement",
            ),
            (
                {"type": "PATH", "compare_type": "EQUAL_TO", "value": "/a", "invert": "perhaps"},
                "unambiguous boolean",
            ),
        ]:
            refused(
                api,
                ctx["lb_id"],
                lambda f=fields: post_rule(api, ctx["policy_id"], **f),
                400,
                message,
                watch,
            )
        accepted = [
            {"type": "HEADER", "compare_type": "CONTAINS", "key": "X-Env", "value": '"a b"'},
            {"type": "COOKIE", "compare_type": "REGEX", "key": "session", "value": "^abc.*$"},
            {"type": "SSL_CONN_HAS_CERT", "compare_type": "EQUAL_TO", "value": "TRUE"},
            {
                "type": "SSL_VERIFY_RESULT",
                "compare_type": "EQUAL_TO",
                "value": "0",
                "invert": "yes",
            },
            {"type": "SSL_DN_FIELD", "compare_type": "STARTS_WITH", "key": "CN", "value": "web"},
        ]
        for fields in accepted:
            made = api.create_l7rule(ctx["lb_id"], ctx["policy_id"], **fields)
            assert made["type"] == fields["type"]

    def test_put_validates_the_merged_rule(self, api: Api) -> None:
        ctx = tree(api)
        rule = api.create_l7rule(
            ctx["lb_id"],
            ctx["policy_id"],
            type="HEADER",
            compare_type="EQUAL_TO",
            key="X-A",
            value="b",
        )
        path = f"{rules_path(ctx['policy_id'])}/{rule['id']}"
        watch = rules_path(ctx["policy_id"])
        for fields, message in [
            ({"key": None}, "L7 rule type requires a key"),
            ({"type": "SSL_VERIFY_RESULT"}, 'does not use the "key" field.'),
            ({"type": None}, "type. Value: 'None'. Mandatory field missing."),
            ({"value": None}, "value. Value: 'None'. Mandatory field missing."),
            ({"bogus": 1}, "Unknown attribute for argument rule_.rule: bogus"),
        ]:
            refused(
                api, ctx["lb_id"], lambda f=fields: api.put(path, {"rule": f}), 400, message, watch
            )
        r = api.put(path, {"rule": {"type": "PATH", "value": "/p", "invert": None, "tags": ["t"]}})
        assert r.status_code == 200, r.text
        assert r.json()["rule"]["provisioning_status"] == "PENDING_UPDATE"
        api.wait_lb(ctx["lb_id"])
        shown = api.get(path).json()["rule"]
        assert (shown["type"], shown["key"], shown["value"], shown["invert"], shown["tags"]) == (
            "PATH",
            "X-A",
            "/p",
            False,
            ["t"],
        )

    def test_at_most_fifty_rules(self, api: Api) -> None:
        ctx = tree(api)
        rules = [{"type": "PATH", "compare_type": "EQUAL_TO", "value": f"/p{i}"} for i in range(50)]
        policy = api.create_l7policy(ctx["lb_id"], ctx["listener_id"], rules=rules)
        assert len(policy["rules"]) == 50
        refused(
            api,
            ctx["lb_id"],
            lambda: post_rule(api, policy["id"], **self.body(ctx, 0)),
            409,
            f"Too many rules on L7 policy {policy['id']}",
            rules_path(policy["id"]),
        )
        refused(
            api,
            ctx["lb_id"],
            lambda: api.post(
                "/v2/lbaas/l7policies",
                {
                    "l7policy": {
                        "listener_id": ctx["listener_id"],
                        "action": "REJECT",
                        "rules": [*rules, rules[0]],
                    }
                },
            ),
            409,
            "Too many rules on L7 policy",
            "/v2/lbaas/l7policies",
        )

    def test_filters(self, api: Api) -> None:
        ctx = tree(api)
        a = api.create_l7rule(
            ctx["lb_id"],
            ctx["policy_id"],
            type="HEADER",
            compare_type="EQUAL_TO",
            key="X-A",
            value="1",
        )
        b = api.create_l7rule(ctx["lb_id"], ctx["policy_id"], invert=True)

        def ids(**params: Any) -> list[str]:
            listed = api.get(rules_path(ctx["policy_id"]), params=params).json()["rules"]
            return [r["id"] for r in listed]

        assert ids(type="HEADER") == [a["id"]]
        assert ids(key="X-A") == [a["id"]]
        assert ids(compare_type="STARTS_WITH") == [b["id"]]
        assert ids(invert="1") == [b["id"]]
        assert ids(value="/api") == [b["id"]]
        assert ids(sort="type:asc") == [a["id"], b["id"]]
        stranger = api.as_("p-beta", "member")
        assert_fault(stranger.get(rules_path(ctx["policy_id"])), 403)

    def test_provider_capability_refusal(self, api: Api, plane: Any) -> None:
        ctx = tree(api)
        with provider_declaring(plane, l7_rule_types=frozenset({"PATH"})):
            refused(
                api,
                ctx["lb_id"],
                lambda: post_rule(
                    api,
                    ctx["policy_id"],
                    type="COOKIE",
                    compare_type="EQUAL_TO",
                    key="c",
                    value="v",
                ),
                400,
                "Provider 'noop' does not support a requested option: L7 rule type COOKIE",
                rules_path(ctx["policy_id"]),
            )
            api.create_l7rule(ctx["lb_id"], ctx["policy_id"])


class TestL7RuleQuota:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"quota": {"l7rule": 1}}

    def test_quota(self, api: Api) -> None:
        ctx = tree(api)
        api.create_l7rule(ctx["lb_id"], ctx["policy_id"])
        refused(
            api,
            ctx["lb_id"],
            lambda: post_rule(
                api, ctx["policy_id"], type="PATH", compare_type="EQUAL_TO", value="/b"
            ),
            403,
            "Quota has been met for resources: L7 Rule",
            rules_path(ctx["policy_id"]),
        )
