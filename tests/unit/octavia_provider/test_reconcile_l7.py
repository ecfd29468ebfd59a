"""The start's reconciliation (reconcile.py) of a single-call create whose L7 policies were
not all created in lbaas when the driver agent restarted: lbaas's mark says they were
never created, so they are created with Octavia's ids, not reported DELETED; without the
mark, a policy lbaas lacks was deleted. A fake lbaas behind httpx's MockTransport and a
fake driver agent."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from lbaas_octavia_provider.agent import Agent
from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.l7_after_commit import MARK, REFUSED, L7AfterCommit
from lbaas_octavia_provider.reconcile import reconcile
from lbaas_octavia_provider.reporter import Reporter
from lbaas_octavia_provider.settings import Settings

LB = "22222222-2222-4222-8222-222222222222"
LISTENER = "11111111-1111-4111-8111-111111111111"
GONE_LISTENER = "33333333-3333-4333-8333-333333333333"
UP = ("ACTIVE", "ONLINE")


def _policy(policy_id: str, listener_id: str = LISTENER) -> dict[str, Any]:
    rule = {"l7rule_id": f"{policy_id}-r", "l7policy_id": policy_id, "project_id": "p1",
            "type": "PATH", "compare_type": "STARTS_WITH", "value": "/api"}  # fmt: skip
    return {"l7policy_id": policy_id, "listener_id": listener_id, "project_id": "p1",
            "action": "REJECT", "position": 1, "rules": [rule]}  # fmt: skip


class Octavia:
    """The driver agent: its get socket's load balancer, a dictionary as octavia-lib's
    ``to_dict(recurse=True)`` gives it; the statuses pushed are recorded."""

    def __init__(self, policies: list[dict[str, Any]]) -> None:
        listeners: dict[str, list[dict[str, Any]]] = {LISTENER: []}
        for policy in policies:
            listeners.setdefault(policy["listener_id"], []).append(policy)
        self.tree: dict[str, Any] | None = {
            "loadbalancer_id": LB, "project_id": "p1", "pools": [],
            "listeners": [{"listener_id": k, "l7policies": v} for k, v in listeners.items()],
        }  # fmt: skip
        self.sent: list[dict[str, Any]] = []

    def get_loadbalancer(self, loadbalancer_id: str) -> Any:
        return self.tree if loadbalancer_id == LB else None

    def update_loadbalancer_status(self, status: dict[str, Any]) -> None:
        self.sent.append(status)

    def update_listener_statistics(self, statistics: dict[str, Any]) -> None:
        return None

    def statuses(self) -> dict[str, str]:
        """What Octavia was last told of each id."""
        told: dict[str, str] = {}
        for message in self.sent:
            for objects in message.values():
                told.update({o["id"]: o["provisioning_status"] for o in objects})
        return told


class Lbaas:
    """One load balancer with one listener; L7 policies as they are created (ACTIVE)."""

    def __init__(self, tags: list[str], status: str = "ACTIVE") -> None:
        self.tags = tags
        self.status = status
        self.policies: dict[str, dict[str, Any]] = {}
        self.posted: list[str] = []
        self.listed = True
        self.gone = False
        self.deleted: list[str] = []
        self.created_at = "2026-01-01T00:00:00"  # long ago: no API process still at work

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/v2/lbaas")
        if request.method == "POST" and path == "/l7policies":
            body = json.loads(request.content)["l7policy"]
            self.posted.append(body["id"])
            self.policies[body["id"]] = body
            return httpx.Response(201, json={"l7policy": body})
        if request.method == "PUT" and path == f"/loadbalancers/{LB}":
            self.tags = json.loads(request.content)["loadbalancer"]["tags"]
            return httpx.Response(200, json={"loadbalancer": {}})
        if request.method == "DELETE":
            self.deleted.append(path)
            return httpx.Response(204)
        if self.gone:
            return httpx.Response(404, json={"faultstring": "not found"})
        return httpx.Response(200, json=self._read(path, request.url.params))

    def _read(self, path: str, params: httpx.QueryParams) -> Any:
        up = {"provisioning_status": "ACTIVE", "operating_status": "ONLINE"}
        if path == "/loadbalancers":
            return {"loadbalancers": [{"id": LB}] if self.listed else []}
        if path.endswith("/stats"):
            return {"stats": {}}
        if path == f"/loadbalancers/{LB}":
            return {"loadbalancer": {"id": LB, "tags": self.tags, "pools": [],
                                     "created_at": self.created_at}}  # fmt: skip
        if path == f"/loadbalancers/{LB}/status":
            listener = {"id": LISTENER, **up, "pools": []}
            lb = {"id": LB, "provisioning_status": self.status, "operating_status": "ONLINE"}
            return {"statuses": {"loadbalancer": {**lb, "listeners": [listener]}}}
        if path == "/l7policies" and params.get("listener_id") == LISTENER:
            return {"l7policies": [{"id": p, **up, "rules": [{"id": f"{p}-r"}]}
                                   for p in self.policies]}  # fmt: skip
        policy_id = path.split("/")[2]
        return {"rules": [{"id": f"{policy_id}-r", **up}]}

    def client(self) -> LbaasClient:
        return LbaasClient(Settings(url="http://lbaas.invalid", retry_seconds=0),
                           transport=httpx.MockTransport(self.handle))  # fmt: skip


def _reconcile(lbaas: Lbaas, octavia: Octavia) -> list[str]:
    client = lbaas.client()
    l7 = L7AfterCommit(client, octavia, sleep=lambda _: None)
    return reconcile(client, Reporter(octavia), l7, [LB])


def test_policies_never_created_are_created_with_octavias_ids_and_reported_active() -> None:
    lbaas = Lbaas(tags=["octavia-provider", MARK])
    octavia = Octavia([_policy("p1"), _policy("p2"), _policy("p3", GONE_LISTENER)])
    lbaas.policies["p2"] = {"id": "p2"}  # taken before the restart
    assert _reconcile(lbaas, octavia) == []
    assert lbaas.posted == ["p1"]  # p3's listener is not in lbaas: that one was deleted
    assert lbaas.policies["p1"]["rules"] == [
        {"id": "p1-r", "type": "PATH", "compare_type": "STARTS_WITH", "value": "/api"}
    ]
    assert lbaas.tags == ["octavia-provider"]
    told = octavia.statuses()
    assert {k: told[k] for k in ("p1", "p1-r", "p2", "p2-r", LB)} == dict.fromkeys(
        ("p1", "p1-r", "p2", "p2-r", LB), "ACTIVE"
    )
    assert told[GONE_LISTENER] == told["p3"] == told["p3-r"] == "DELETED"


def test_without_the_mark_a_policy_lbaas_lacks_was_deleted() -> None:
    lbaas = Lbaas(tags=["octavia-provider"])
    octavia = Octavia([_policy("p1")])
    assert _reconcile(lbaas, octavia) == []
    assert lbaas.posted == [] and lbaas.tags == ["octavia-provider"]
    told = octavia.statuses()
    assert told["p1"] == told["p1-r"] == "DELETED" and told[LB] == "ACTIVE"


def test_a_policy_lbaas_refused_stays_error_in_octavia_not_deleted() -> None:
    lbaas = Lbaas(tags=["octavia-provider", f"{REFUSED}p1"])
    octavia = Octavia([_policy("p1"), _policy("p2")])
    assert _reconcile(lbaas, octavia) == []
    told = octavia.statuses()
    assert "p1" not in told and "p1-r" not in told  # left as Octavia has it: ERROR
    assert told["p2"] == told["p2-r"] == "DELETED" and told[LB] == "ACTIVE"


def test_a_marked_load_balancer_lbaas_still_converges_is_left_for_a_later_round() -> None:
    lbaas = Lbaas(tags=["octavia-provider", MARK], status="PENDING_CREATE")
    octavia = Octavia([_policy("p1")])
    assert _reconcile(lbaas, octavia) == [LB]
    assert lbaas.posted == [] and octavia.sent == []
    lbaas.status = "ACTIVE"
    assert _reconcile(lbaas, octavia) == []
    assert lbaas.posted == ["p1"] and octavia.statuses()["p1"] == "ACTIVE"


def test_one_octavia_does_not_know_waits_until_old_then_goes_unless_gone_already() -> None:
    lbaas = Lbaas(tags=["octavia-provider"])
    octavia = Octavia([])
    octavia.tree = None  # rolled back in Octavia after lbaas took the create
    lbaas.created_at = datetime.now(UTC).isoformat()
    assert _reconcile(lbaas, octavia) == [LB] and lbaas.deleted == []
    lbaas.gone = True
    assert _reconcile(lbaas, octavia) == [] and lbaas.deleted == []
    lbaas.gone, lbaas.created_at = False, "2026-01-01T00:00:00"
    assert _reconcile(lbaas, octavia) == []
    assert lbaas.deleted == [f"/loadbalancers/{LB}"] and octavia.sent == []


def test_a_marked_load_balancer_in_error_in_lbaas_has_its_policies_error_not_deleted() -> None:
    lbaas = Lbaas(tags=["octavia-provider", MARK], status="ERROR")
    octavia = Octavia([_policy("p1")])
    assert _reconcile(lbaas, octavia) == []
    assert lbaas.posted == [] and lbaas.tags == ["octavia-provider", MARK]
    told = octavia.statuses()
    assert told["p1"] == told["p1-r"] == "ERROR" and told[LB] == "ERROR"


class Rounds:
    """The driver agent's exit event: set after ``rounds`` waits, ``between`` run at each."""

    def __init__(self, rounds: int, between: Callable[[], None]) -> None:
        self.left = rounds
        self.between = between

    def is_set(self) -> bool:
        return self.left <= 0

    def wait(self, timeout: float | None = None) -> bool:
        self.left -= 1
        self.between()
        return self.is_set()


def _agent(lbaas: Lbaas, octavia: Octavia) -> Agent:
    agent = Agent(lbaas.client(), octavia, Settings(url="http://lbaas.invalid"))
    agent.l7 = L7AfterCommit(agent.client, octavia, sleep=lambda _: None)
    return agent


def test_the_agent_finishes_a_deferred_load_balancer_at_its_next_round() -> None:
    lbaas = Lbaas(tags=["octavia-provider", MARK], status="PENDING_CREATE")
    octavia = Octavia([_policy("p1")])
    agent = _agent(lbaas, octavia)
    agent.run(Rounds(2, lambda: setattr(lbaas, "status", "ACTIVE")))
    assert lbaas.posted == ["p1"] and lbaas.tags == ["octavia-provider"]
    assert agent.deferred == [] and octavia.statuses()["p1"] == "ACTIVE"


def test_the_rounds_finish_a_mark_the_api_process_abandoned() -> None:
    """The agent was up all along (its reconcile saw nothing); the API process gave the
    policy up (lbaas away for 15 minutes) and left the mark."""
    lbaas = Lbaas(tags=["octavia-provider", MARK])
    lbaas.listed = False
    octavia = Octavia([_policy("p1")])
    agent = _agent(lbaas, octavia)
    agent.run(Rounds(3, lambda: setattr(lbaas, "listed", True)))
    assert lbaas.posted == ["p1"] and lbaas.tags == ["octavia-provider"]
    assert agent.deferred == [] and octavia.statuses()["p1"] == "ACTIVE"


def test_a_young_mark_is_left_to_the_api_process() -> None:
    lbaas = Lbaas(tags=["octavia-provider", MARK])
    lbaas.listed = False
    agent = _agent(lbaas, Octavia([_policy("p1")]))
    lbaas.created_at = datetime.now(UTC).isoformat()
    agent.run(Rounds(3, lambda: setattr(lbaas, "listed", True)))
    assert lbaas.posted == [] and lbaas.tags == ["octavia-provider", MARK]
    assert agent.deferred == []
