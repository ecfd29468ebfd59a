"""The OpenAPI document states the rules the API enforces, and links its operations.

Each case below is a request the document used to call valid and the API refuses with a
400 (issue 31: NUL in ``fields``, a provider that is not enabled, a member address that
is not an IP, a VIP without subnet, network or port, …). For each, the API's refusal is
checked for real and the document's schema for that part of the request must now refuse
the same value. The links are followed against the running app.
"""

from __future__ import annotations

import uuid
from typing import Any

import jsonschema_rs
import pytest

from tests.support.api_client import Api

LBS = "/v2/lbaas/loadbalancers"
POOLS = "/v2/lbaas/pools"
MEMBERS = "/v2/lbaas/pools/{pool_id}/members"
HMS = "/v2/lbaas/healthmonitors"
POLICIES = "/v2/lbaas/l7policies"
LISTENERS = "/v2/lbaas/listeners"
SUBNET = "7f000a00-0000-4000-8000-000000000001"  # the loopback subnet every plane has


def _lb(**fields: Any) -> dict[str, Any]:
    return {"loadbalancer": {"vip_subnet_id": SUBNET, **fields}}


# (path, method, where, the value) — where: "body", or "query:<name>", or "path:<name>".
CASES: list[tuple[str, str, str, Any]] = [
    ("/v2/lbaas/loadbalancers/{lb_id}", "get", "query:fields", ["a\x00b"]),
    (LBS, "post", "body", _lb(provider="0")),
    (LBS, "post", "body", _lb(name="a\x00b")),
    (LBS, "post", "body", {"loadbalancer": {"name": "no VIP at all"}}),
    (LBS, "post", "body", {"loadbalancer": {"vip_subnet_id": None, "name": "null"}}),
    (LBS, "post", "body", _lb(vip_address="not-an-ip")),
    (LBS, "post", "body", _lb(additional_vips=[{"subnet_id": ""}])),
    (LBS, "post", "body", {"loadbalancer": {"vip_subnet_id": "*"}}),
    # a pool of a single-call create with neither a name nor a given id
    (LBS, "post", "body", _lb(pools=[{"protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}])),
    ("/v2/lbaas/providers/{provider}/flavor_capabilities", "get", "path:provider", "0"),
    (
        "/v2/lbaas/flavorprofiles",
        "post",
        "body",
        {"flavorprofile": {"name": "x", "provider_name": "", "flavor_data": "{}"}},
    ),
    (MEMBERS, "post", "body", {"member": {"address": "not-an-ip", "protocol_port": 80}}),
    (MEMBERS, "post", "body", {"member": {"address": "fe80::1%lo", "protocol_port": 80}}),
    (MEMBERS, "post", "body", {"member": {"address": "", "protocol_port": 80}}),
    (POOLS, "post", "body", {"pool": {"protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}}),
    (
        HMS,
        "post",
        "body",
        {
            "healthmonitor": {
                "pool_id": "{pool}",
                "type": "HTTP",
                "delay": 1,
                "timeout": 1,
                "max_retries": 1,
                "url_path": "",
            }
        },
    ),
    (
        HMS,
        "post",
        "body",
        {
            "healthmonitor": {
                "pool_id": "{pool}",
                "type": "HTTP",
                "delay": 1,
                "timeout": 1,
                "max_retries": 1,
                "expected_codes": "",
            }
        },
    ),
    (
        HMS,
        "post",
        "body",
        {
            "healthmonitor": {
                "pool_id": "{pool}",
                "type": "HTTP",
                "delay": 1,
                "timeout": 1,
                "max_retries": 1,
                "domain_name": "-x",
            }
        },
    ),
    (
        HMS,
        "post",
        "body",
        {
            "healthmonitor": {
                "pool_id": "{pool}",
                "type": "HTTP",
                "delay": 1,
                "timeout": 1,
                "max_retries": 1,
                "http_version": 1e-05,
            }
        },
    ),
    (
        POLICIES,
        "post",
        "body",
        {
            "l7policy": {
                "listener_id": "{listener}",
                "action": "REDIRECT_TO_URL",
                "redirect_url": "",
            }
        },
    ),
    (
        POLICIES,
        "post",
        "body",
        {
            "l7policy": {
                "listener_id": "{listener}",
                "action": "REDIRECT_TO_URL",
                "redirect_url": "http://x/",
                "redirect_http_code": 300,
            }
        },
    ),
    (
        LISTENERS,
        "post",
        "body",
        {
            "listener": {
                "loadbalancer_id": "{lb}",
                "protocol": "TCP",
                "protocol_port": 81,
                "allowed_cidrs": ["x"],
            }
        },
    ),
    (
        POOLS,
        "post",
        "body",
        {
            "pool": {
                "loadbalancer_id": "{lb}",
                "protocol": "HTTP",
                "lb_algorithm": "ROUND_ROBIN",
                "tls_ciphers": "a b",
            }
        },
    ),
]


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value.strip("{}"), value) if value.startswith("{") else value
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


def _schema(document: dict[str, Any], path: str, method: str, where: str) -> dict[str, Any]:
    operation = document["paths"][path][method]
    if where == "body":
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
    else:
        place, name = where.split(":")
        schema = next(
            p["schema"] for p in operation["parameters"] if p["in"] == place and p["name"] == name
        )
    return {**schema, "components": document["components"]}


def _document_accepts(document: dict[str, Any], case: tuple[str, str, str, Any]) -> bool:
    path, method, where, value = case
    validator = jsonschema_rs.validator_for(
        _schema(document, path, method, where), validate_formats=True
    )
    return bool(validator.is_valid(value))


def _send(admin: Api, case: tuple[str, str, str, Any], ids: dict[str, str]) -> Any:
    path, method, where, value = case
    params: dict[str, Any] = {}
    body = None
    names = {"lb_id": ids["lb"], "pool_id": ids["pool"]}
    if where == "body":
        body = _fill(value, ids)
    elif where.startswith("query:"):
        params[where.split(":")[1]] = value
    else:
        names[where.split(":")[1]] = value
    target = path.format(**names)
    return admin.request(method.upper(), target, params=params, json=body)


def test_every_refused_case_is_outside_the_document(admin: Api) -> None:
    document = admin.get("/openapi.json").json()
    lb = admin.create_lb()
    listener = admin.create_listener(lb["id"], protocol="HTTP", protocol_port=80)
    pool = admin.create_pool(lb["id"], protocol="HTTP", lb_algorithm="ROUND_ROBIN")
    ids = {"lb": lb["id"], "listener": listener["id"], "pool": pool["id"]}
    admin.wait_lb(lb["id"])
    for case in CASES:
        answer = _send(admin, case, ids)
        assert answer.status_code == 400, (case, answer.status_code, answer.text)
        assert not _document_accepts(document, case), (case, answer.json()["faultstring"])


def test_what_the_document_states_is_accepted(admin: Api) -> None:
    """The new rules do not refuse what the API takes: the forms it accepts pass them."""
    document = admin.get("/openapi.json").json()
    accepted: list[tuple[str, str, str, Any]] = [
        (LBS, "post", "body", _lb(provider="noop", vip_address="127.0.10.9")),
        (LBS, "post", "body", _lb(provider="")),  # the default provider
        (LBS, "post", "body", {"loadbalancer": {"vip_subnet_id": SUBNET.replace("-", "")}}),
        (LBS, "post", "body", {"loadbalancer": {"vip_subnet_id": "{" + SUBNET.upper() + "}"}}),
        (MEMBERS, "post", "body", {"member": {"address": "2001:db8::1", "protocol_port": 80}}),
        # a single-call create's pools known by the ids an administrator gives (GivenId)
        (
            LBS,
            "post",
            "body",
            _lb(
                listeners=[{"protocol": "HTTP", "protocol_port": 80, "default_pool_id": SUBNET}],
                pools=[{"id": SUBNET, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}],
            ),
        ),
        ("/v2/lbaas/loadbalancers/{lb_id}", "get", "query:fields", ["id", "name"]),
        (
            HMS,
            "post",
            "body",
            {
                "healthmonitor": {
                    "pool_id": str(uuid.uuid4()),
                    "type": "HTTP",
                    "delay": 1,
                    "timeout": 1,
                    "max_retries": 1,
                    "url_path": "/health?x=%20#a",
                    "expected_codes": "200, 202",
                    "domain_name": "a-b.example.",
                    "http_version": 1.1,
                }
            },
        ),
    ]
    for case in accepted:
        assert _document_accepts(document, case), case


def _resolve(expression: str, response: dict[str, Any]) -> Any:
    assert expression.startswith("$response.body#/"), expression
    value: Any = response
    for key in expression.removeprefix("$response.body#/").split("/"):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def _operation(document: dict[str, Any], operation_id: str) -> tuple[str, str]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if operation.get("operationId") == operation_id:
                return path, method
    raise AssertionError(f"no operation {operation_id}")


@pytest.mark.parametrize("collection", [LBS])
def test_links_lead_from_a_create_to_the_object_and_its_children(
    admin: Api, collection: str
) -> None:
    document = admin.get("/openapi.json").json()
    links = document["paths"][collection]["post"]["responses"]["201"]["links"]
    created = admin.post(collection, json=_lb()).json()
    admin.wait_lb(created["loadbalancer"]["id"])
    reached = set()
    for link in links.values():
        path, method = _operation(document, link["operationId"])
        if "requestBody" in link:
            wrapper, fields = next(iter(link["requestBody"].items()))
            reached.add((method, path, tuple(fields)))
            continue
        target = path
        for name, expression in link["parameters"].items():
            target = target.replace("{" + name.split(".")[1] + "}", _resolve(expression, created))
        if method == "get":
            assert admin.get(target).status_code == 200, target
        reached.add((method, path))
    assert ("get", "/v2/lbaas/loadbalancers/{lb_id}") in reached
    assert ("delete", "/v2/lbaas/loadbalancers/{lb_id}") in reached
    assert ("post", LISTENERS, ("loadbalancer_id",)) in reached
    assert ("post", POOLS, ("loadbalancer_id",)) in reached


def test_links_cover_the_whole_tree_and_the_catalog(admin: Api) -> None:
    document = admin.get("/openapi.json").json()

    def targets(path: str, method: str, status: str) -> set[str]:
        links = document["paths"][path][method]["responses"][status].get("links", {})
        return {_operation(document, link["operationId"])[0] for link in links.values()}

    assert MEMBERS in targets(POOLS, "post", "201")
    assert HMS in targets(POOLS, "post", "201")
    assert POOLS in targets(LISTENERS, "post", "201")
    assert POLICIES in targets(LISTENERS, "post", "201")
    assert "/v2/lbaas/l7policies/{l7policy_id}/rules" in targets(POLICIES, "post", "201")
    assert "/v2/lbaas/l7policies/{l7policy_id}/rules/{rule_id}" in targets(
        "/v2/lbaas/l7policies/{l7policy_id}/rules", "post", "201"
    )
    assert "/v2/lbaas/pools/{pool_id}/members/{member_id}" in targets(MEMBERS, "post", "201")
    assert "/v2/lbaas/flavors" in targets("/v2/lbaas/flavorprofiles", "post", "201")
    assert "/v2/lbaas/availabilityzones/{name}" in targets(
        "/v2/lbaas/availabilityzones", "post", "201"
    )
    assert "/v2/lbaas/quotas/{project_id}/default" in targets(
        "/v2/lbaas/quotas/{project_id}", "put", "202"
    )
    assert LBS in targets("/v2.0/subnets", "get", "200")
