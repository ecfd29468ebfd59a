"""The Octavia v2 REST API of a running ``lbaas serve``, driven with httpx as a client would.

Every write waits for the load balancer to be ACTIVE again before returning, and a write
answered 409 (the load balancer is busy, say with a failover the health manager asked for)
is retried once it is ACTIVE, which is what a patient client does.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

import httpx

from tests.support.waiting import wait_until

V2 = "/v2/lbaas"
ACTIVE_TIMEOUT = 60.0
POLL = 0.05


class OctaviaApi:
    """One client of the API (noauth: the default project, as admin)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=timeout)

    def __enter__(self) -> OctaviaApi:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # -- plumbing ------------------------------------------------------------------

    def get(self, path: str) -> dict[str, Any]:
        response = self.http.get(path)
        assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text}"
        body: dict[str, Any] = response.json()
        return body

    def write(
        self, method: str, path: str, lb_id: str, body: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A write on ``lb_id``'s tree; retried while it is busy; waits for ACTIVE after."""
        deadline = time.monotonic() + ACTIVE_TIMEOUT
        while True:
            response = self.http.request(method, path, json=body)
            if response.status_code != 409 or time.monotonic() > deadline:
                break
            self.wait_active(lb_id)
        assert response.status_code in (200, 201, 202, 204), (
            f"{method} {path}: {response.status_code} {response.text}"
        )
        self.wait_active(lb_id)
        result: dict[str, Any] = response.json() if response.content else {}
        return result

    # -- load balancers --------------------------------------------------------------

    def loadbalancer(self, lb_id: str) -> dict[str, Any]:
        lb: dict[str, Any] = self.get(f"{V2}/loadbalancers/{lb_id}")["loadbalancer"]
        return lb

    def converge_error(self, lb_id: str) -> str | None:
        response = self.http.get(f"{V2}/loadbalancers/{lb_id}/converge_status")
        if response.status_code != 200:
            return None
        error: str | None = response.json()["converge_status"]["last_error"]
        return error

    def wait_active(self, lb_id: str, timeout: float = ACTIVE_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.loadbalancer(lb_id)
            status = last["provisioning_status"]
            if status == "ACTIVE":
                return last
            if status == "ERROR":
                raise AssertionError(
                    f"load balancer {lb_id} went to ERROR: {self.converge_error(lb_id)}"
                )
            time.sleep(POLL)
        raise AssertionError(
            f"load balancer {lb_id} not ACTIVE after {timeout}s: {last.get('provisioning_status')}"
            f" (last converge error: {self.converge_error(lb_id)})"
        )

    def create_loadbalancer(self, subnet_id: str, **fields: Any) -> dict[str, Any]:
        body = {"loadbalancer": {"vip_subnet_id": subnet_id, **fields}}
        response = self.http.post(f"{V2}/loadbalancers", json=body)
        assert response.status_code == 201, response.text
        lb: dict[str, Any] = response.json()["loadbalancer"]
        return self.wait_active(lb["id"])

    def status_tree(self, lb_id: str) -> dict[str, Any]:
        tree: dict[str, Any] = self.get(f"{V2}/loadbalancers/{lb_id}/status")["statuses"]
        return tree

    def loadbalancer_stats(self, lb_id: str) -> dict[str, int]:
        stats: dict[str, int] = self.get(f"{V2}/loadbalancers/{lb_id}/stats")["stats"]
        return stats

    def failover(self, lb_id: str) -> None:
        response = self.http.put(f"{V2}/loadbalancers/{lb_id}/failover")
        assert response.status_code == 202, response.text

    def amphorae(self, lb_id: str | None = None) -> list[dict[str, Any]]:
        path = "/v2/octavia/amphorae"
        if lb_id is not None:
            path += f"?loadbalancer_id={lb_id}"
        amphorae: list[dict[str, Any]] = self.get(path)["amphorae"]
        return amphorae

    def amphora(self, amphora_id: str) -> dict[str, Any]:
        amphora: dict[str, Any] = self.get(f"/v2/octavia/amphorae/{amphora_id}")["amphora"]
        return amphora

    def delete_loadbalancer(self, lb_id: str, timeout: float = ACTIVE_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            response = self.http.delete(f"{V2}/loadbalancers/{lb_id}?cascade=true")
            if response.status_code in (204, 404) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert response.status_code in (204, 404), response.text
        wait_until(
            lambda: self.http.get(f"{V2}/loadbalancers/{lb_id}").status_code == 404,
            timeout,
            f"load balancer {lb_id} to be deleted",
        )

    def delete_all_loadbalancers(self, timeout: float) -> None:
        for lb in self.get(f"{V2}/loadbalancers")["loadbalancers"]:
            self.http.delete(f"{V2}/loadbalancers/{lb['id']}?cascade=true")
        for lb in self.get(f"{V2}/loadbalancers")["loadbalancers"]:
            self.delete_loadbalancer(lb["id"], timeout)

    # -- listeners, pools, members, monitors, L7 -----------------------------------

    def create_listener(
        self, lb_id: str, protocol: str, port: int, **fields: Any
    ) -> dict[str, Any]:
        body = {
            "listener": {
                "loadbalancer_id": lb_id,
                "protocol": protocol,
                "protocol_port": port,
                **fields,
            }
        }
        listener: dict[str, Any] = self.write("POST", f"{V2}/listeners", lb_id, body)["listener"]
        return listener

    def update_listener(self, lb_id: str, listener_id: str, **fields: Any) -> dict[str, Any]:
        body = {"listener": fields}
        path = f"{V2}/listeners/{listener_id}"
        listener: dict[str, Any] = self.write("PUT", path, lb_id, body)["listener"]
        return listener

    def listener_stats(self, listener_id: str) -> dict[str, int]:
        stats: dict[str, int] = self.get(f"{V2}/listeners/{listener_id}/stats")["stats"]
        return stats

    def create_pool(
        self,
        lb_id: str,
        protocol: str,
        algorithm: str = "ROUND_ROBIN",
        listener_id: str | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        pool_body: dict[str, Any] = {"protocol": protocol, "lb_algorithm": algorithm, **fields}
        if listener_id is not None:
            pool_body["listener_id"] = listener_id
        else:
            pool_body["loadbalancer_id"] = lb_id
        pool: dict[str, Any] = self.write("POST", f"{V2}/pools", lb_id, {"pool": pool_body})["pool"]
        return pool

    def create_member(
        self, lb_id: str, pool_id: str, address: str, port: int, **fields: Any
    ) -> dict[str, Any]:
        body = {"member": {"address": address, "protocol_port": port, **fields}}
        path = f"{V2}/pools/{pool_id}/members"
        member: dict[str, Any] = self.write("POST", path, lb_id, body)["member"]
        return member

    def update_member(
        self, lb_id: str, pool_id: str, member_id: str, **fields: Any
    ) -> dict[str, Any]:
        path = f"{V2}/pools/{pool_id}/members/{member_id}"
        member: dict[str, Any] = self.write("PUT", path, lb_id, {"member": fields})["member"]
        return member

    def delete_member(self, lb_id: str, pool_id: str, member_id: str) -> None:
        self.write("DELETE", f"{V2}/pools/{pool_id}/members/{member_id}", lb_id)

    def member(self, pool_id: str, member_id: str) -> dict[str, Any]:
        member: dict[str, Any] = self.get(f"{V2}/pools/{pool_id}/members/{member_id}")["member"]
        return member

    def create_healthmonitor(self, lb_id: str, pool_id: str, **fields: Any) -> dict[str, Any]:
        body = {"healthmonitor": {"pool_id": pool_id, **fields}}
        monitor: dict[str, Any] = self.write("POST", f"{V2}/healthmonitors", lb_id, body)[
            "healthmonitor"
        ]
        return monitor

    def create_l7policy(
        self, lb_id: str, listener_id: str, action: str, **fields: Any
    ) -> dict[str, Any]:
        body = {"l7policy": {"listener_id": listener_id, "action": action, **fields}}
        policy: dict[str, Any] = self.write("POST", f"{V2}/l7policies", lb_id, body)["l7policy"]
        return policy

    def create_l7rule(
        self,
        lb_id: str,
        policy_id: str,
        rule_type: str,
        compare_type: str,
        value: str,
        **fields: Any,
    ) -> dict[str, Any]:
        body = {"rule": {"type": rule_type, "compare_type": compare_type, "value": value, **fields}}
        path = f"{V2}/l7policies/{policy_id}/rules"
        rule: dict[str, Any] = self.write("POST", path, lb_id, body)["rule"]
        return rule
