"""The L7 policies of a single-call create, created in lbaas once Octavia has committed
(l7_after_commit.py), against a fake lbaas behind httpx's MockTransport and a fake driver
agent: Octavia's listeners reach the driver without their policies, its get socket has
them."""

from __future__ import annotations

import json
from typing import Any

import httpx
from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.l7_after_commit import REFUSED, L7AfterCommit
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
    """lbaas: the load balancer PENDING_CREATE for ``pending`` reads, then ``settled``;
    L7 policy creates recorded, those with ids in ``refused`` answered 400, the first
    ``failing`` answered with ``failure`` (a status, or None: no answer at all)."""

    def __init__(
        self,
        pending: int = 0,
        refused: frozenset[str] = frozenset(),
        failing: int = 0,
        failure: int | None = None,
        settled: str = "ACTIVE",
    ) -> None:
        self.pending = pending
        self.refused = refused
        self.failing = failing
        self.failure = failure
        self.settled = settled
        self.created: list[dict[str, Any]] = []
        self.tags: list[list[str]] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/v2/lbaas")
        if request.method == "GET" and path == f"/loadbalancers/{LB}":
            status = "PENDING_CREATE" if self.pending > 0 else self.settled
            self.pending -= 1
            return httpx.Response(200, json={"loadbalancer": {"provisioning_status": status}})
        if request.method == "PUT" and path == f"/loadbalancers/{LB}":
            self.tags.append(json.loads(request.content)["loadbalancer"]["tags"])
            return httpx.Response(200, json={"loadbalancer": {}})
        if request.method == "POST" and path == "/l7policies":
            return self._post(json.loads(request.content)["l7policy"], request)
        return httpx.Response(404, json={"faultstring": "not found"})

    def _post(self, body: dict[str, Any], request: httpx.Request) -> httpx.Response:
        assert self.pending < 0, "an L7 policy posted before lbaas settled"
        if self.failing > 0:
            self.failing -= 1
            if self.failure is None:
                raise httpx.ConnectError("connection refused", request=request)
            fault = f"Invalid state PENDING_UPDATE of loadbalancer resource {LB}"
            return httpx.Response(self.failure, json={"faultstring": fault})
        if body["id"] in self.refused:
            return httpx.Response(400, json={"faultstring": "no L7 here"})
        self.created.append(body)
        return httpx.Response(201, json={"l7policy": body})

    def client(self) -> LbaasClient:
        return LbaasClient(Settings(url="http://lbaas.invalid", retry_seconds=0),
                           transport=httpx.MockTransport(self.handle))  # fmt: skip


class Clock:
    """Time that passes only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _run(lbaas: Lbaas, octavia: Octavia, clock: Clock | None = None) -> Clock:
    clock = clock or Clock()
    L7AfterCommit(lbaas.client(), octavia, clock=clock, sleep=clock.sleep).run(LB)
    return clock


ERROR = {"provisioning_status": "ERROR", "operating_status": "ERROR"}
UNMARKED = [["octavia-provider"]]


def test_policies_are_created_in_order_with_their_ids_once_both_sides_are_ready() -> None:
    lbaas = Lbaas(pending=3)
    octavia = Octavia(after=3, policies=[_policy("p2", 2, "api"), _policy("p1", 1, "web")])
    _run(lbaas, octavia)
    assert [p["id"] for p in lbaas.created] == ["p1", "p2"]
    first = lbaas.created[0]
    assert first == {
        "id": "p1", "listener_id": LISTENER, "action": "REDIRECT_TO_POOL",
        "redirect_pool_id": "web", "position": 1, "admin_state_up": True,
        "rules": [{"id": "p1-r", "type": "PATH", "compare_type": "STARTS_WITH",
                   "value": "/api", "invert": False, "admin_state_up": True}],
    }  # fmt: skip
    assert octavia.sent == []
    assert lbaas.tags == UNMARKED  # the work is done: a restart has nothing to finish


def test_a_policy_lbaas_refuses_is_error_in_octavia_and_the_others_are_created() -> None:
    lbaas = Lbaas(refused=frozenset({"p1"}))
    octavia = Octavia(after=1, policies=[_policy("p1", 1, "web"), _policy("p2", 2, "api")])
    _run(lbaas, octavia)
    assert [p["id"] for p in lbaas.created] == ["p2"]
    assert octavia.sent == [
        {"l7rules": [{"id": "p1-r", **ERROR}], "l7policies": [{"id": "p1", **ERROR}]}
    ]
    # A refusal is an outcome, recorded so that no reconciliation reports it DELETED.
    assert lbaas.tags == [["octavia-provider", f"{REFUSED}p1"]]


def test_lbaas_unreachable_for_a_while_is_waited_for_with_backoff() -> None:
    lbaas = Lbaas(failing=5)
    octavia = Octavia(after=1, policies=[_policy("p1", 1, "web")])
    clock = _run(lbaas, octavia)
    assert [p["id"] for p in lbaas.created] == ["p1"]
    assert octavia.sent == [] and lbaas.tags == UNMARKED
    assert clock.slept == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_5xx_and_pending_conflicts_are_retried_not_errors() -> None:
    for status in (500, 503, 409):
        lbaas = Lbaas(failing=2, failure=status)
        octavia = Octavia(after=1, policies=[_policy("p1", 1, "web")])
        _run(lbaas, octavia)
        assert [p["id"] for p in lbaas.created] == ["p1"], status
        assert octavia.sent == [], status


def test_lbaas_away_beyond_the_give_up_is_error_and_the_mark_stays_for_the_agent() -> None:
    lbaas = Lbaas(failing=10**6)
    octavia = Octavia(after=1, policies=[_policy("p1", 1, "web")])
    clock = _run(lbaas, octavia)
    assert lbaas.created == [] and lbaas.tags == []
    assert octavia.sent == [
        {"l7rules": [{"id": "p1-r", **ERROR}], "l7policies": [{"id": "p1", **ERROR}]}
    ]
    assert 850 < clock.now <= 900 and max(clock.slept) == 10.0


def test_an_lbaas_load_balancer_in_error_takes_no_policy_and_each_is_error() -> None:
    lbaas = Lbaas(settled="ERROR")
    octavia = Octavia(after=1, policies=[_policy("p1", 1, "web")])
    _run(lbaas, octavia)
    assert lbaas.created == [] and lbaas.tags == []
    assert octavia.sent == [
        {"l7rules": [{"id": "p1-r", **ERROR}], "l7policies": [{"id": "p1", **ERROR}]}
    ]


def test_a_create_without_policies_only_drops_the_mark() -> None:
    lbaas = Lbaas()
    _run(lbaas, Octavia(after=1, policies=[]))
    assert lbaas.created == [] and lbaas.tags == UNMARKED


def test_a_create_octavia_never_commits_adds_nothing() -> None:
    lbaas = Lbaas()
    octavia = Octavia(after=10**9, policies=[_policy("p1", 1, "web")])
    _run(lbaas, octavia)
    assert lbaas.created == [] and octavia.sent == [] and lbaas.tags == []
