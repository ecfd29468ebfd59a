"""The /v1/l4 routes in-process: what a node answers, and what it leaves out unasked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.fleet.agent_app import create_agent_app
from lbaas.host.recording import RecordingHostOps
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.base import Prober
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import Target
from lbaas.l4.host.recording import RecordingNftOps, RecordingVipHolder
from lbaas.l4node.manager import L4NodeManager
from lbaas.model.enums import LbAlgorithm, ListenerProtocol, PoolProtocol
from lbaas.providers.distributed.locality import localised
from lbaas.providers.distributed.translate import service_spec
from lbaas.wire.amphora import AgentInfo
from tests.support.graphs import listener, load_balancer, member, pool

GRAPH = load_balancer(
    [listener("tcp", ListenerProtocol.TCP, 80, default_pool="tcp")],
    [
        pool(
            "tcp",
            [member("a", "10.9.0.1", 8000), member("b", "10.9.0.2", 8000)],
            protocol=PoolProtocol.TCP,
            algorithm=LbAlgorithm.MAGLEV,
        )
    ],
    vip_address="10.9.9.9",
)


class NeverProbes(Prober):
    async def probe(self, target: Target) -> bool:
        raise AssertionError("the checker is not started in these tests")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    amphorae = AmphoraRegistry(
        tmp_path / "amphorae", RecordingHostOps(lambda text: None, allow_namespaces=False)
    )
    checker = HealthChecker(NeverProbes(), lambda changes: None)
    l4 = L4NodeManager(tmp_path / "l4", L4Engine(RecordingNftOps()), checker, RecordingVipHolder())

    def info() -> AgentInfo:
        return AgentInfo(mode="loopback", haproxy_version="test", amphora_root=str(tmp_path))

    with TestClient(create_agent_app(amphorae, info, l4)) as test_client:
        yield test_client


def test_a_node_says_which_members_are_local_only_when_asked(client: TestClient) -> None:
    (member_a, _) = GRAPH.pools[0].members
    spec = localised(service_spec(GRAPH, version=5), {member_a.id: frozenset({"h1"})}, "h1")
    put = client.put(
        f"/v1/l4/{GRAPH.id}",
        content=spec.model_dump_json(),
        headers={"content-type": "application/json"},
    )
    assert put.status_code == 200, put.text
    # Unasked fields are left out, not sent as null: a controller of an earlier release
    # refuses fields it does not know.
    assert "local_members" not in put.json() and "placement" not in put.json()
    plain = client.get(f"/v1/l4/{GRAPH.id}").json()
    assert plain["applied_version"] == 5 and "local_members" not in plain
    asked = client.get(f"/v1/l4/{GRAPH.id}?local=true&placement=true").json()
    assert asked["local_members"] == [member_a.id]
    assert set(asked["placement"]) == {GRAPH.listeners[0].id}


def test_a_node_answers_for_every_load_balancer_in_one_call(client: TestClient) -> None:
    assert client.get("/v1/l4").json() == {"services": {}}
    spec = service_spec(GRAPH, version=9)
    put = client.put(
        f"/v1/l4/{GRAPH.id}",
        content=spec.model_dump_json(),
        headers={"content-type": "application/json"},
    )
    assert put.status_code == 200, put.text
    listed = client.get("/v1/l4").json()["services"]
    assert set(listed) == {GRAPH.id}
    # the same view as the single GET, local members only when asked
    assert listed[GRAPH.id] == client.get(f"/v1/l4/{GRAPH.id}").json()
    local = client.get("/v1/l4?local=true").json()["services"][GRAPH.id]
    assert local["local_members"] == []
