"""A thin client for API tests: headers per caller, and waiting for ACTIVE."""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient

LOOPBACK_SUBNET = "7f000a00-0000-4000-8000-000000000001"


class Api:
    """Calls the API in-process as one caller (project and roles)."""

    def __init__(self, client: TestClient, project: str = "p-alpha", roles: str = "member") -> None:
        self.client = client
        self.project = project
        self.roles = roles

    def as_(self, project: str, roles: str) -> Api:
        return Api(self.client, project, roles)

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Project-Id": self.project, "X-Roles": self.roles}

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return self.client.request(method, path, headers=headers, **kwargs)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json=json, **kw)

    def put(self, path: str, json: Any = None, **kw: Any) -> Any:
        return self.request("PUT", path, json=json, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    # -- waiting -------------------------------------------------------------------

    def wait_lb(self, lb_id: str, status: str = "ACTIVE", timeout: float = 15.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            r = self.get(f"/v2/lbaas/loadbalancers/{lb_id}")
            if status == "DELETED" and r.status_code == 404:
                return {}
            last = r.json().get("loadbalancer", r.json())
            if last.get("provisioning_status") == status:
                return last
            time.sleep(0.01)
        raise AssertionError(f"load balancer {lb_id} not {status} in {timeout}s: {last}")

    # -- building trees ------------------------------------------------------------

    def create_lb(self, **fields: Any) -> dict[str, Any]:
        body = {"vip_subnet_id": LOOPBACK_SUBNET, **fields}
        r = self.post("/v2/lbaas/loadbalancers", {"loadbalancer": body})
        assert r.status_code == 201, r.text
        lb: dict[str, Any] = r.json()["loadbalancer"]
        self.wait_lb(lb["id"])
        return lb

    def create_child(
        self, path: str, wrapper: str, lb_id: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        r = self.post(path, {wrapper: body})
        assert r.status_code == 201, r.text
        self.wait_lb(lb_id)
        return dict(r.json()[wrapper])

    def create_listener(self, lb_id: str, **fields: Any) -> dict[str, Any]:
        body = {"loadbalancer_id": lb_id, "protocol": "HTTP", "protocol_port": 80, **fields}
        return self.create_child("/v2/lbaas/listeners", "listener", lb_id, body)

    def create_pool(self, lb_id: str, **fields: Any) -> dict[str, Any]:
        body = {"protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN", **fields}
        if "listener_id" not in body:
            body.setdefault("loadbalancer_id", lb_id)
        return self.create_child("/v2/lbaas/pools", "pool", lb_id, body)

    def create_member(self, lb_id: str, pool_id: str, **fields: Any) -> dict[str, Any]:
        body = {"address": "192.0.2.10", "protocol_port": 80, **fields}
        return self.create_child(f"/v2/lbaas/pools/{pool_id}/members", "member", lb_id, body)

    def create_healthmonitor(self, lb_id: str, pool_id: str, **fields: Any) -> dict[str, Any]:
        body = {
            "pool_id": pool_id,
            "type": "HTTP",
            "delay": 5,
            "timeout": 3,
            "max_retries": 3,
            **fields,
        }
        return self.create_child("/v2/lbaas/healthmonitors", "healthmonitor", lb_id, body)

    def create_l7policy(self, lb_id: str, listener_id: str, **fields: Any) -> dict[str, Any]:
        body = {"listener_id": listener_id, "action": "REJECT", **fields}
        return self.create_child("/v2/lbaas/l7policies", "l7policy", lb_id, body)

    def create_l7rule(self, lb_id: str, policy_id: str, **fields: Any) -> dict[str, Any]:
        body = {"type": "PATH", "compare_type": "STARTS_WITH", "value": "/api", **fields}
        return self.create_child(f"/v2/lbaas/l7policies/{policy_id}/rules", "rule", lb_id, body)
