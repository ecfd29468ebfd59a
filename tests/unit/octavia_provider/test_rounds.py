"""The provider agent's rounds and the watcher thread (agent.py, watcher.py) against a fake
lbaas behind httpx's MockTransport: one load balancer failing to report does not hold back
the others, and a report the driver agent failed is tried again."""

from __future__ import annotations

from typing import Any

import httpx
from lbaas_octavia_provider.agent import Agent
from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.reporter import Reporter
from lbaas_octavia_provider.settings import Settings
from lbaas_octavia_provider.watcher import Watcher


def _tree(lb_id: str, prov: str = "ACTIVE") -> dict[str, Any]:
    return {"statuses": {"loadbalancer": {"id": lb_id, "provisioning_status": prov,
                                          "operating_status": "ONLINE", "listeners": []}}}  # fmt: skip


class FakeLbaas:
    """lbaas's answers by path; ``broken`` load balancers answer 500."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.prov = {lb_id: "ACTIVE" for lb_id in ids}
        self.broken: set[str] = set()

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/v2/lbaas")
        if path == "/loadbalancers":
            return httpx.Response(200, json={"loadbalancers": [{"id": i} for i in self.ids]})
        lb_id = path.split("/")[2]
        if lb_id in self.broken:
            return httpx.Response(500, json={"faultstring": "broken"})
        if path.endswith("/status"):
            return httpx.Response(200, json=_tree(lb_id, self.prov[lb_id]))
        return httpx.Response(200, json={"loadbalancer": {"id": lb_id, "pools": []}})

    def client(self) -> LbaasClient:
        return LbaasClient(Settings(url="http://lbaas.invalid"),
                           transport=httpx.MockTransport(self.handle))  # fmt: skip


class Sink:
    """The driver agent's status socket: records, or fails the next ``failures`` pushes."""

    def __init__(self, failures: int = 0) -> None:
        self.sent: list[dict[str, Any]] = []
        self.failures = failures

    def update_loadbalancer_status(self, status: dict[str, Any]) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("The driver agent did not respond in 30 seconds.")
        self.sent.append(status)

    def update_listener_statistics(self, statistics: dict[str, Any]) -> None:
        return None

    def get_loadbalancer(self, loadbalancer_id: str) -> Any:
        return None


def _reported(sink: Sink) -> list[str]:
    return [lb["id"] for sent in sink.sent for lb in sent.get("loadbalancers", [])]


def test_one_load_balancer_failing_does_not_hold_back_the_others() -> None:
    lbaas = FakeLbaas(["a", "b", "c"])
    lbaas.broken.add("a")
    sink = Sink()
    agent = Agent(lbaas.client(), sink, Settings(), clock=lambda: 0.0)
    agent.round()
    assert _reported(sink) == ["b", "c"]
    lbaas.broken.clear()
    agent.round()  # the failed one is tried again, and the full push with it
    assert _reported(sink) == ["b", "c", "a", "b", "c"]


def test_the_watcher_tries_a_failed_report_again() -> None:
    lbaas = FakeLbaas(["a"])
    sink = Sink(failures=2)
    waits: list[float] = []
    Watcher(lbaas.client(), Reporter(sink), sleep=waits.append).settle("a", [])
    assert _reported(sink) == ["a"]
    assert waits[1:] == [1.0, 2.0]


def test_the_watcher_waits_for_lbaas_to_settle_and_sends_no_pending_status() -> None:
    lbaas = FakeLbaas(["a"])
    lbaas.prov["a"] = "PENDING_UPDATE"
    sink = Sink()
    looks: list[float] = []

    def sleep(seconds: float) -> None:
        looks.append(seconds)
        if len(looks) == 3:
            lbaas.prov["a"] = "ACTIVE"

    Watcher(lbaas.client(), Reporter(sink), sleep=sleep).settle("a", [])
    assert sink.sent == [{"loadbalancers": [{"id": "a", "provisioning_status": "ACTIVE",
                                             "operating_status": "ONLINE"}]}]  # fmt: skip
