"""The amphora provider's database writes are fenced by the job's lease (real database).

A worker whose lease expired and was claimed by another worker must not create an amphora
row or a port, whether it lost the lease before its first write or while it waited for the
agent.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import select

from lbaas.db.jobs import job_queue
from lbaas.db.tables import AmphoraRow
from lbaas.errors import AgentUnreachable
from lbaas.model.enums import AmphoraStatus
from lbaas.model.graph import LoadBalancerId
from lbaas.providers.amphora.driver import AmphoraProvider
from lbaas.providers.amphora.store.database import DatabaseAmphoraStore
from lbaas.providers.base import LeaseLost, ProviderContext
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.graphs import listener, load_balancer, member, pool
from tests.unit.providers.amphora_fakes import RecordingAgent


def _post_lb(api: Api) -> str:
    r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}})
    assert r.status_code == 201
    return str(r.json()["loadbalancer"]["id"])


def _amphorae(plane: Any, lb_id: str) -> list[AmphoraRow]:
    with plane.database.read() as session:
        rows = session.scalars(select(AmphoraRow).where(AmphoraRow.loadbalancer_id == lb_id))
        return list(rows)


def _provider(plane: Any, agent: RecordingAgent) -> AmphoraProvider:
    client: Any = agent
    return AmphoraProvider(
        ProviderContext(plane.settings, plane.database),
        store=DatabaseAmphoraStore(plane.database),
        client=client,
    )


def _graph(lb_id: str) -> Any:
    graph = load_balancer(
        [listener("web", default_pool="web")], [pool("web", [member("a", "127.0.0.1", 9001)])]
    )
    return replace(graph, id=LoadBalancerId(lb_id))


def _stale_and_current(db: Any) -> tuple[job_queue.Claim, job_queue.Claim]:
    stale = job_queue.claim_next(db, "worker-a", time.time(), lease_seconds=0.01)
    assert stale is not None
    time.sleep(0.02)  # worker-a's lease expires; worker-b reclaims the job
    current = job_queue.claim_next(db, "worker-b", time.time(), lease_seconds=30)
    assert current is not None and current.loadbalancer_id == stale.loadbalancer_id
    return stale, current


def test_a_worker_whose_lease_was_reclaimed_creates_no_amphora(
    idle_plane: Any, idle_api: Api
) -> None:
    lb_id = _post_lb(idle_api)
    stale, current = _stale_and_current(idle_plane.database)
    agent = RecordingAgent()
    provider = _provider(idle_plane, agent)
    with pytest.raises(LeaseLost):
        provider.apply(_graph(lb_id), stale)
    assert _amphorae(idle_plane, lb_id) == []
    assert agent.calls == 0
    provider.apply(_graph(lb_id), current)  # the worker holding the lease does the work
    [row] = _amphorae(idle_plane, lb_id)
    assert row.status == AmphoraStatus.ALLOCATED and list(agent.specs) == [row.id]


def test_a_lease_lost_while_the_agent_works_stops_the_next_write(
    idle_plane: Any, idle_api: Api
) -> None:
    lb_id = _post_lb(idle_api)
    db = idle_plane.database
    first = job_queue.claim_next(db, "worker-a", time.time(), lease_seconds=0.01)
    assert first is not None

    class SlowAgent(RecordingAgent):
        def put_amphora(self, amphora_id: str, spec: Any) -> Any:
            time.sleep(0.02)  # paused past the lease; another worker takes the job over
            assert job_queue.claim_next(db, "worker-b", time.time(), lease_seconds=30)
            return super().put_amphora(amphora_id, spec)

    provider = _provider(idle_plane, SlowAgent())
    with pytest.raises(LeaseLost):
        provider.apply(_graph(lb_id), first)
    [row] = _amphorae(idle_plane, lb_id)  # created while the lease was held
    assert row.status == AmphoraStatus.PENDING_CREATE  # but not marked serving afterwards


def test_a_retried_rebuild_in_the_database_retires_only_the_amphora_it_replaces(
    idle_plane: Any, idle_api: Api
) -> None:
    lb_id = _post_lb(idle_api)
    claim = job_queue.claim_next(idle_plane.database, "worker-r", time.time(), lease_seconds=30)
    assert claim is not None and claim.loadbalancer_id == lb_id
    agent = RecordingAgent()
    provider = _provider(idle_plane, agent)
    provider.apply(_graph(lb_id), claim)
    [original] = _amphorae(idle_plane, lb_id)
    agent.unreachable = True  # the agent goes away during the rebuild: its job retries
    for _ in range(3):
        with pytest.raises(AgentUnreachable):
            provider.apply(_graph(lb_id), claim, rebuild=True)
    agent.unreachable = False
    provider.apply(_graph(lb_id), claim, rebuild=True)
    rows = {row.id: row.status for row in _amphorae(idle_plane, lb_id)}
    assert len(rows) == 2, rows  # one replacement, not one per attempt
    assert rows.pop(original.id) == AmphoraStatus.DELETED
    assert list(rows.values()) == [AmphoraStatus.ALLOCATED]
