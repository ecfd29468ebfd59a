"""The L7 policies of a single-call create, created in lbaas once Octavia has committed
(l7_after_commit.py), against a fake lbaas behind httpx's MockTransport and a fake driver
agent: Octavia's listeners reach the driver without their policies, its get socket has
them."""

from __future__ import annotations

import json
from typing import Any

import httpx
from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.l7_after_commit import L7AfterCommit
from lbaas_octavia_provider.settings import Settings

LB = "22222222-2222-4222-8222-222222222222"
LISTENER = "11111111-1111-4111-8111-111111111111"


def _policy(policy_id: str, position: int, pool: str) -> dict[str, Any]:
    rule = {"l7rule_id": f"{policy_id}-r", "l7policy_id": policy_id, "project_id": "p1",
            "type": "PATH", "compare_type": "STARTS_WITH", "value": "/api", "key": None,
            "invert": False, "admin_state_up": True}  # fmt: skip
    return {"l7policy_id": policy_id, "listener_id": LISTENER, "project_id": "p1",
            "action": "REDIRECT_TO_POOL", "redirect_pool_id": pool, "redirect_url": None,
            "position": position, "admin_state_up": True, "rules": [rule]}  # fmt: skip


class Octavia:
    """The driver agent's get socket: nothing until the create is committed (``after``
    asks), then the load balancer as a model whose listeners are dictionaries."""

    def __init__(self, after: int, policies: list[dict[str, Any]]) -> None:
        self.after = after
        self.policies = policies
        self.sent: list[dict[str, Any]] = []

    def get_loadbalancer(self, loadbalancer_id: str) -> Any:
        self.after -= 1
        if self.after > 0:
            return None
        listener = {"listener_id": LISTENER, "l7policies": self.policies}
        return _Model(loadbalancer_id=loadbalancer_id, project_id="p1", listeners=[listener])

    def update_loadbalancer_status(self, status: dict[str, Any]) -> None:
        self.sent.append(status)

    def update_listener_statistics(self, statistics: dict[str, Any]) -> None:
        return None


class _Model:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Lbaas:
    """lbaas: the load balancer PENDING_CREATE for ``pending`` reads; L7 policy creates
    recorded, those with ids in ``refused`` answered 400."""

    def __init__(self, pending: int = 0, refused: frozenset[str] = frozenset()) -> None:
        self.pending = pending
        self.refused = refused
        self.created: list[dict[str, Any]] = []
        self.reads_while_pending = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/v2/lbaas")
        if request.method == "GET" and path == f"/loadbalancers/{LB}":
            status = "PENDING_CREATE" if self.pending > 0 else "ACTIVE"
            self.pending -= 1
            return httpx.Response(200, json={"loadbalancer": {"provisioning_status": status}})
        if request.method == "POST" and path == "/l7policies":
            body = json.loads(request.content)["l7policy"]
            assert self.pending < 0, "an L7 policy posted before lbaas settled"
            if body["id"] in self.refused:
                return httpx.Response(400, json={"faultstring": "no L7 here"})
            self.created.append(body)
            return httpx.Response(201, json={"l7policy": body})
        return httpx.Response(404, json={"faultstring": "not found"})

    def client(self) -> LbaasClient:
        return LbaasClient(Settings(url="http://lbaas.invalid", retry_seconds=0),
                           transport=httpx.MockTransport(self.handle))  # fmt: skip


def test_policies_are_created_in_order_with_their_ids_once_both_sides_are_ready() -> None:
    lbaas = Lbaas(pending=3)
    octavia = Octavia(after=3, policies=[_policy("p2", 2, "api"), _policy("p1", 1, "web")])
    L7AfterCommit(lbaas.client(), octavia, sleep=lambda _: None).run(LB)
    assert [p["id"] for p in lbaas.created] == ["p1", "p2"]
    first = lbaas.created[0]
    assert first == {
        "id": "p1", "listener_id": LISTENER, "action": "REDIRECT_TO_POOL",
        "redirect_pool_id": "web", "position": 1, "admin_state_up": True,
        "rules": [{"id": "p1-r", "type": "PATH", "compare_type": "STARTS_WITH",
                   "value": "/api", "invert": False, "admin_state_up": True}],
    }  # fmt: skip
    assert octavia.sent == []


def test_a_policy_lbaas_refuses_is_error_in_octavia_and_the_others_are_created() -> None:
    lbaas = Lbaas(refused=frozenset({"p1"}))
    octavia = Octavia(after=1, policies=[_policy("p1", 1, "web"), _policy("p2", 2, "api")])
    L7AfterCommit(lbaas.client(), octavia, sleep=lambda _: None).run(LB)
    assert [p["id"] for p in lbaas.created] == ["p2"]
    error = {"provisioning_status": "ERROR", "operating_status": "ERROR"}
    assert octavia.sent == [
        {"l7rules": [{"id": "p1-r", **error}], "l7policies": [{"id": "p1", **error}]}
    ]


def test_a_create_octavia_never_commits_adds_nothing() -> None:
    lbaas = Lbaas()
    octavia = Octavia(after=10**9, policies=[_policy("p1", 1, "web")])
    ticks = iter(range(10**6))
    L7AfterCommit(lbaas.client(), octavia, clock=lambda: float(next(ticks)),
                  sleep=lambda _: None).run(LB)  # fmt: skip
    assert lbaas.created == [] and octavia.sent == []
