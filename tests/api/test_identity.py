"""noauth mode: identity from Keystone-style headers, defaults when none are sent."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"api": {"auth_strategy": "noauth", "default_project_id": "embedded"}}


def _create(client: TestClient, headers: dict[str, str]) -> Any:
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    return client.post("/v2/lbaas/loadbalancers", json=body, headers=headers)


def test_no_headers_means_default_project_as_admin(client: TestClient) -> None:
    r = _create(client, {})
    assert r.status_code == 201
    assert r.json()["loadbalancer"]["project_id"] == "embedded"
    # admin by default: failover is allowed, lists span projects
    lb_id = r.json()["loadbalancer"]["id"]
    other = _create(client, {"X-Project-Id": "p-two", "X-Roles": "member"})
    assert other.status_code == 201
    listed = client.get("/v2/lbaas/loadbalancers").json()["loadbalancers"]
    assert {lb["project_id"] for lb in listed} == {"embedded", "p-two"}
    assert lb_id in {lb["id"] for lb in listed}


def test_headers_are_honoured_and_rbac_enforced(client: TestClient) -> None:
    reader = {"X-Project-Id": "p-one", "X-Roles": "reader"}
    assert_fault(_create(client, reader), 403, "Policy does not allow")
    member = {"X-Project-Id": "p-one", "X-Roles": "member"}
    assert _create(client, member).status_code == 201
    assert len(client.get("/v2/lbaas/loadbalancers", headers=reader).json()["loadbalancers"]) == 1
    stranger = {"X-Project-Id": "p-two", "X-Roles": "member"}
    assert client.get("/v2/lbaas/loadbalancers", headers=stranger).json()["loadbalancers"] == []
    assert_fault(
        client.get("/v2/lbaas/loadbalancers", params={"project_id": "p-one"}, headers=stranger),
        403,
    )


def test_deprecated_roles_only_when_new_defaults_are_off(client: TestClient) -> None:
    legacy = {"X-Project-Id": "p-one", "X-Roles": "load-balancer_member"}
    assert_fault(_create(client, legacy), 403)
