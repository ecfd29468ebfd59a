"""``auth_strategy = "keystone"``: every request's token validated against Keystone.

Keystone here is ``tests/support/keystone_standin.py``, a stand-in serving only the token
API lbaas calls, with Keystone's body shape (a real Keystone is issue 30's stage 4). The
tests go through ``http_app``, as served: the Octavia API, the key manager, the
Networking-shaped reads and the dashboard's data all need a token; identity headers a
client sends are replaced by what Keystone said; a validated token is remembered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.keystone_standin import (
    SERVICE_PASSWORD,
    SERVICE_USER,
    KeystoneStandIn,
    keystone_standin,
)

LBS = "/v2/lbaas/loadbalancers"


@pytest.fixture
def standin() -> Iterator[KeystoneStandIn]:
    with keystone_standin() as running:
        yield running


@pytest.fixture
def cache_time() -> float:
    return 300.0


@pytest.fixture
def settings_overrides(standin: KeystoneStandIn, cache_time: float) -> dict[str, Any]:
    return {
        "api": {"auth_strategy": "keystone"},
        "keystone_authtoken": {
            "auth_url": standin.url,
            "www_authenticate_uri": "http://keystone.example:5000",
            "username": SERVICE_USER,
            "password": SERVICE_PASSWORD,
            "project_name": "service",
            "token_cache_time": cache_time,
        },
    }


def _create(client: TestClient, token: str, **headers: str) -> Any:
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    return client.post(LBS, json=body, headers={"X-Auth-Token": token, **headers})


def _unauthorized(reply: Any) -> None:
    assert_fault(reply, 401, "requires authentication")
    assert reply.headers["www-authenticate"] == 'Keystone uri="http://keystone.example:5000"'


@pytest.mark.parametrize(
    "path",
    [LBS, "/v2.0/networks", "/v2/ports", "/key-manager/v1/secrets", "/dashboard/topology"],
)
def test_every_surface_needs_a_token(client: TestClient, path: str) -> None:
    _unauthorized(client.get(path))
    _unauthorized(client.get(path, headers={"X-Auth-Token": "not-a-token"}))
    # Headers alone no longer make an identity, admin's included.
    _unauthorized(client.get(path, headers={"X-Project-Id": "p", "X-Roles": "admin"}))


def test_version_documents_stay_open(client: TestClient) -> None:
    assert client.get("/").status_code == 200
    assert client.get("/v2").status_code == 200


def test_the_token_says_who_calls_not_the_headers(
    client: TestClient, standin: KeystoneStandIn
) -> None:
    member = standin.issue("alice", "p-alpha", ["member", "reader"])
    made = _create(client, member, **{"X-Project-Id": "p-beta", "X-Roles": "admin"})
    assert made.status_code == 201, made.text
    lb = made.json()["loadbalancer"]
    assert lb["project_id"] == "p-alpha"
    # Not an admin, whatever X-Roles said: failover is the admin's.
    failover = client.put(
        f"{LBS}/{lb['id']}/failover", headers={"X-Auth-Token": member, "X-Roles": "admin"}
    )
    assert_fault(failover, 403, "Policy does not allow")
    stranger = standin.issue("bob", "p-beta", ["member", "reader"])
    mine = client.get(LBS, headers={"X-Auth-Token": stranger}).json()["loadbalancers"]
    assert mine == []
    observer = standin.issue("carol", "p-alpha", ["reader"])
    assert_fault(_create(client, observer), 403)
    listed = client.get(LBS, headers={"X-Auth-Token": observer}).json()["loadbalancers"]
    assert [x["id"] for x in listed] == [lb["id"]]
    key_manager = client.get("/key-manager/v1/secrets", headers={"X-Auth-Token": member})
    assert key_manager.status_code == 200


def test_a_validated_token_is_remembered(client: TestClient, standin: KeystoneStandIn) -> None:
    token = standin.issue("alice", "p-alpha", ["reader"])
    for _ in range(3):
        assert client.get(LBS, headers={"X-Auth-Token": token}).status_code == 200
    assert standin.validations == 1
    # Revoked in Keystone: still accepted while remembered (at most token_cache_time).
    standin.revoke(token)
    assert client.get(LBS, headers={"X-Auth-Token": token}).status_code == 200
    for _ in range(2):
        _unauthorized(client.get(LBS, headers={"X-Auth-Token": "forged"}))
    assert standin.validations == 2  # a refusal is remembered too


@pytest.mark.parametrize("cache_time", [0.0])
def test_without_a_cache_revocation_is_immediate(
    client: TestClient, standin: KeystoneStandIn
) -> None:
    token = standin.issue("alice", "p-alpha", ["reader"])
    assert client.get(LBS, headers={"X-Auth-Token": token}).status_code == 200
    standin.revoke(token)
    _unauthorized(client.get(LBS, headers={"X-Auth-Token": token}))
    assert standin.validations == 2


def test_service_tokens(client: TestClient, standin: KeystoneStandIn) -> None:
    user = standin.issue("ceilometer-user", "p-alpha", ["reader"])
    service = standin.issue("ceilometer", "service", ["service"])
    both = {"X-Auth-Token": user, "X-Service-Token": service}
    assert client.get(LBS, headers=both).status_code == 200
    _unauthorized(client.get(LBS, headers={**both, "X-Service-Token": "forged"}))


def test_keystone_down_is_503_and_no_secret_is_logged(
    client: TestClient, standin: KeystoneStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = standin.issue("alice", "p-alpha", ["reader"])
    standin.failing = True
    reply = client.get(LBS, headers={"X-Auth-Token": token})
    assert_fault(reply, 503, "temporarily unavailable")
    assert token not in caplog.text
    assert SERVICE_PASSWORD not in caplog.text


def test_the_dashboard_logs_in_with_a_password(
    client: TestClient, standin: KeystoneStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    form = {"username": SERVICE_USER, "password": SERVICE_PASSWORD, "project": "service"}
    reply = client.post("/dashboard/login", json=form)  # no token: the route is open
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    issued = reply.json()
    assert issued["token"] == standin.service_token
    assert (issued["user"], issued["project"]) == (SERVICE_USER, "name-service")
    assert issued["expires_at"].startswith("2099-")
    refused = client.post("/dashboard/login", json={**form, "password": "wrong"})
    assert_fault(refused, 401, "Keystone refused the login")
    assert SERVICE_PASSWORD not in caplog.text and "wrong" not in caplog.text
    assert standin.service_token not in caplog.text


@pytest.mark.parametrize("settings_overrides", [{}])
def test_without_keystone_the_dashboard_has_no_login(client: TestClient) -> None:
    form = {"username": "u", "password": "p", "project": "x"}
    assert client.post("/dashboard/login", json=form).status_code == 404
