"""No input gets a 5xx: NUL characters, unpaired surrogates, overflowing integers, bad
timestamps, oversized project ids and bodies are 400 (or 413) in Octavia's shape, on
SQLite and PostgreSQL, and the client's next request is served normally.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lbaas.api.neutron_errors import NETWORKING_COLLECTIONS
from tests.api.resource_base import assert_fault, assert_neutron_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api

LBS = "/v2/lbaas/loadbalancers"
JSON_TYPE = {"Content-Type": "application/json"}

BAD_URLS = [
    "/v2/lbaas/listeners?protocol_port=99999999999999999999999",
    "/v2/lbaas/listeners?protocol_port=4294967296",
    "/v2/lbaas/healthmonitors?delay=99999999999999999999",
    "/v2/lbaas/healthmonitors?max_retries=-2147483649",
    "/v2/lbaas/l7policies?position=2147483648",
    "/v2/lbaas/loadbalancers?name=a%00b",
    "/v2/lbaas/loadbalancers/%00",
    "/v2/lbaas/loadbalancers/a%00",
    "/v2/lbaas/loadbalancers?created_at=garbage",
    "/v2/lbaas/loadbalancers?updated_at=2026-13-45",
    "/v2/lbaas/loadbalancers?marker=%00",
    "/v2/lbaas/pools/%00/members",
    "/v2/lbaas/flavors/%00",
    "/v2/ports/%00",
    "/v2/subnets/%00",
    "/v2/networks/%00",
    "/v3/projects/%00",
]


def _lb_body(**fields: Any) -> str:
    return json.dumps({"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, **fields}})


BAD_BODIES = [
    ("POST", LBS, _lb_body(name="a\x00b"), "name"),
    ("POST", LBS, _lb_body(name="\ud800"), "name"),
    ("POST", LBS, _lb_body(description="x\udfff"), "description"),
    ("POST", LBS, _lb_body(tags=["ok", "\ud800"]), "tags"),
    ("POST", LBS, _lb_body(**{"\ud800": 1}), "loadbalancer"),
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_bad_urls_are_400(api: Api, url: str) -> None:
    if url.split("/")[2] in NETWORKING_COLLECTIONS:  # Neutron's body on those routes
        assert_neutron_fault(api.get(url), 400, "NUL characters", "HTTPBadRequest")
    else:
        assert_fault(api.get(url), 400)
    assert api.get(LBS).status_code == 200


@pytest.mark.parametrize(("method", "path", "body", "field"), BAD_BODIES)
def test_unstorable_strings_in_bodies_are_400(
    api: Api, method: str, path: str, body: str, field: str
) -> None:
    r = api.request(method, path, content=body.encode("utf-8"), headers=JSON_TYPE)
    assert_fault(r, 400, f"Invalid input for field/attribute {field}.")
    assert api.get(LBS).json()["loadbalancers"] == []


def _raw(caller: Api, method: str, path: str, body: dict[str, Any]) -> Any:
    """Send ``body`` as JSON even when it holds an unpaired surrogate."""
    content = json.dumps(body).encode("utf-8")
    return caller.request(method, path, content=content, headers=JSON_TYPE)


def test_unstorable_strings_in_updates_and_catalog_bodies_are_400(api: Api, admin: Api) -> None:
    lb = api.create_lb()
    r = _raw(api, "PUT", f"{LBS}/{lb['id']}", {"loadbalancer": {"description": "\ud800"}})
    assert_fault(r, 400, "description")
    listener = {"loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": 80}
    r = _raw(api, "POST", "/v2/lbaas/listeners", {"listener": {**listener, "name": "\x00"}})
    assert_fault(r, 400, "name")
    profile = {"name": "a\x00", "provider_name": "noop", "flavor_data": "{}"}
    r = _raw(admin, "POST", "/v2/lbaas/flavorprofiles", {"flavorprofile": profile})
    assert_fault(r, 400, "name")
    assert_fault(_raw(admin, "PUT", "/v2/lbaas/quotas/%00", {"quota": {"pool": 3}}), 400)
    assert api.get(f"{LBS}/{lb['id']}").json()["loadbalancer"]["description"] == ""


def test_timestamp_filters_take_iso_8601(api: Api) -> None:
    api.create_lb()
    for value in ("2026-01-01T00:00:00", "2026-01-01 00:00:00.5", "2026-01-01T00:00:00+02:00"):
        r = api.get(LBS, params={"created_at": value})
        assert r.status_code == 200, r.text
        assert r.json()["loadbalancers"] == []


def test_a_project_id_longer_than_its_column_is_400(api: Api) -> None:
    long = api.as_("p" * 37, "member")
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    assert_fault(long.post(LBS, body), 400, "project_id")
    assert api.get(LBS).status_code == 200


def _chunks(total: int, size: int = 65536) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        yield b"x" * size
        sent += size


def test_a_chunked_body_over_the_limit_is_413_on_a_real_server(base_url: str) -> None:
    """No Content-Length: the limit is enforced while the body streams in."""
    headers = {"X-Project-Id": "p-alpha", "X-Roles": "member", "Content-Type": "application/json"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
        try:
            r = client.post(LBS, content=_chunks(16 * 1024 * 1024))
        except httpx.TransportError:
            # The server may close while the rest is still being sent; ask what it said.
            pytest.fail("the server closed the connection without a 413")
        assert "content-length" not in r.request.headers
        assert_fault(r, 413, "Request is too large.")
        assert client.get(LBS).status_code == 200


def test_bad_input_leaves_a_keep_alive_connection_usable(base_url: str) -> None:
    headers = {"X-Project-Id": "p-alpha", "X-Roles": "member"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        for url in BAD_URLS[:4]:
            assert_fault(client.get(url), 400)
            assert client.get(LBS).status_code == 200
        body = _lb_body(name="\ud800").encode("utf-8")
        r = client.post(LBS, content=body, headers=JSON_TYPE)
        assert_fault(r, 400, "name")
        assert client.get(LBS).status_code == 200
