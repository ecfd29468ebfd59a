"""What ``lbaas diagnose`` reads about one load balancer: its stored tree, its desired
graph, its converge job and its amphorae, in one read connection."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Connection

from lbaas.db.graph_loader import graph_from_tree
from lbaas.db.stored_tree import StoredLoadBalancer
from lbaas.db.tables import AmphoraRow, ConvergeJobRow, table_of
from lbaas.db.tree_loader import load_tree
from lbaas.model.enums import AmphoraStatus
from lbaas.model.graph import LoadBalancer


@dataclass(frozen=True)
class JobFacts:
    requested_gen: int
    done_gen: int
    attempts: int
    lease_owner: str | None
    lease_expires_at: float | None
    next_attempt_at: float
    last_error: str | None


@dataclass(frozen=True)
class AmphoraFacts:
    id: str
    status: str
    host: str | None
    last_heartbeat_at: float | None
    failover_pending: bool


@dataclass(frozen=True)
class LoadBalancerFacts:
    tree: StoredLoadBalancer
    graph: LoadBalancer
    job: JobFacts | None
    amphorae: list[AmphoraFacts]


def _job(conn: Connection, loadbalancer_id: str) -> JobFacts | None:
    c = table_of(ConvergeJobRow).c
    row = conn.execute(
        select(
            c.requested_gen,
            c.done_gen,
            c.attempts,
            c.lease_owner,
            c.lease_expires_at,
            c.next_attempt_at,
            c.last_error,
        ).where(c.loadbalancer_id == loadbalancer_id)
    ).one_or_none()
    return None if row is None else JobFacts(*row)


def _amphorae(conn: Connection, loadbalancer_id: str) -> list[AmphoraFacts]:
    c = table_of(AmphoraRow).c
    rows = conn.execute(
        select(c.id, c.status, c.host, c.last_heartbeat_at, c.failover_pending)
        .where(c.loadbalancer_id == loadbalancer_id, c.status != AmphoraStatus.DELETED.value)
        .order_by(c.created_at)
    )
    return [AmphoraFacts(*row) for row in rows]


def load_balancer_facts(conn: Connection, loadbalancer_id: str) -> LoadBalancerFacts | None:
    """None when no such load balancer exists (or it is DELETED)."""
    tree = load_tree(conn, loadbalancer_id)
    if tree is None:
        return None
    graph = graph_from_tree(conn, tree)
    return LoadBalancerFacts(
        tree, graph, _job(conn, loadbalancer_id), _amphorae(conn, loadbalancer_id)
    )
