"""The distributed status poll reads each load balancer's current graph.

Its health-manager store keeps graphs in memory and drops one when a heartbeat batch shows
its version moved; no heartbeat names a distributed load balancer, so the poll asks for
the versions itself each round. Without that, a graph read before the members were added
was polled (and port-binding moves went unseen) until a status write refreshed it, up to
30 s later: a lab test caught it. Real app and store, SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from lbaas.health.distributed_poll import DistributedStatusPoller
from lbaas.health.sql_store import SqlHealthStore
from lbaas.model.graph import LoadBalancer
from lbaas.model.health import HealthReport
from tests.support.api_client import Api


def test_each_round_polls_the_graph_as_stored_now(api: Api, plane: Any) -> None:
    lb = api.create_lb()["id"]
    seen: list[int] = []

    def report(graph: LoadBalancer) -> HealthReport | None:
        seen.append(sum(len(p.members) for p in graph.pools))
        return None  # nothing to write: what the round read is the point

    poller = DistributedStatusPoller(SqlHealthStore(plane.database), lambda: [lb], lambda: report)
    poller.poll_once()
    listener = api.create_listener(lb)
    pool = api.create_pool(lb, listener_id=listener["id"])
    api.create_member(lb, pool["id"])
    api.wait_lb(lb)
    poller.poll_once()
    poller.poll_once()  # unchanged since: the graph kept in memory serves
    assert seen == [0, 1, 1]
