"""What the API accepts, the HAProxy data plane can apply.

Each input below was accepted with 201 and then left its load balancer in ERROR: the
renderer or HAProxy refused it. The API now validates with the data plane's own rules
(``lbaas.render.haproxy.inputs``) and answers 400 in Octavia's shape, storing nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.resource_base import assert_fault
from tests.support.api_client import Api

RULE_ERRORS = [
    ({"type": "PATH", "compare_type": "REGEX", "value": "(?a)^/api"}, "regular expression"),
    ({"type": "PATH", "compare_type": "REGEX", "value": "\\u0041"}, "regular expression"),
    *[
        ({"type": kind, "compare_type": "EQUAL_TO", "key": key, "value": "v"}, "key")
        for kind in ("HEADER", "COOKIE")
        for key in ("X#A", "X$A", "X'A")
    ],
]


@pytest.fixture
def tree(api: Api) -> dict[str, Any]:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"], listener_id=listener["id"])
    policy = api.create_l7policy(lb["id"], listener["id"])
    return {"lb": lb, "pool": pool, "policy": policy}


@pytest.mark.parametrize(("rule", "reason"), RULE_ERRORS)
def test_rules_haproxy_cannot_load_are_400(
    api: Api, tree: dict[str, Any], rule: dict[str, str], reason: str
) -> None:
    path = f"/v2/lbaas/l7policies/{tree['policy']['id']}/rules"
    assert_fault(api.post(path, {"rule": rule}), 400, reason)
    assert api.get(path).json()["rules"] == []


def test_regexes_haproxy_loads_are_accepted(api: Api, tree: dict[str, Any]) -> None:
    path = f"/v2/lbaas/l7policies/{tree['policy']['id']}/rules"
    for value in ("^/api/v[0-9]+/", "(?i)\\.png$", "a{2,}+"):
        rule = {"type": "PATH", "compare_type": "REGEX", "value": value}
        r = api.post(path, {"rule": rule})
        assert r.status_code == 201, r.text
        api.wait_lb(tree["lb"]["id"])
    header = {"type": "HEADER", "compare_type": "EQUAL_TO", "key": "X-Trace_id", "value": "v"}
    assert api.post(path, {"rule": header}).status_code == 201


def test_app_cookie_names_haproxy_cannot_read_are_400(api: Api, tree: dict[str, Any]) -> None:
    sp = {"type": "APP_COOKIE", "cookie_name": "a$b"}
    r = api.put(f"/v2/lbaas/pools/{tree['pool']['id']}", {"pool": {"session_persistence": sp}})
    assert_fault(r, 400, "cookie_name")
    assert (
        api.get(f"/v2/lbaas/pools/{tree['pool']['id']}").json()["pool"]["session_persistence"]
        is None
    )


def test_a_member_address_with_an_ipv6_zone_is_400(api: Api, tree: dict[str, Any]) -> None:
    members = f"/v2/lbaas/pools/{tree['pool']['id']}/members"
    for address in ("fe80::1%lo backup", "fe80::1%lo"):
        body = {"member": {"address": address, "protocol_port": 80}}
        assert_fault(api.post(members, body), 400, "address")
    assert api.get(members).json()["members"] == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("expected_codes", "２００"),
        ("url_path", "/health\n"),
        ("domain_name", "example.com\n"),
    ],
)
def test_monitor_strings_haproxy_cannot_send_are_400(
    api: Api, tree: dict[str, Any], field: str, value: str
) -> None:
    body = {
        "pool_id": tree["pool"]["id"],
        "type": "HTTP",
        "delay": 5,
        "timeout": 3,
        "max_retries": 3,
        "http_version": 1.1,
        field: value,
    }
    assert_fault(api.post("/v2/lbaas/healthmonitors", {"healthmonitor": body}), 400, field)
    assert api.get("/v2/lbaas/healthmonitors").json()["healthmonitors"] == []


def test_allowed_cidrs_with_an_ipv6_zone_are_400(api: Api, tree: dict[str, Any]) -> None:
    """Found beside the thirteen: a CIDR takes the same zone text an address does."""
    body = {
        "loadbalancer_id": tree["lb"]["id"],
        "protocol": "TCP",
        "protocol_port": 81,
        "allowed_cidrs": ["fe80::1%lo backup/128"],
    }
    assert_fault(api.post("/v2/lbaas/listeners", {"listener": body}), 400, "allowed_cidrs")
    assert len(api.get("/v2/lbaas/listeners").json()["listeners"]) == 1
