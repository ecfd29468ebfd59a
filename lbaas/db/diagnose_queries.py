"""What ``lbaas diagnose`` reads about one load balancer: its stored tree, its desired
graph, its converge job, its amphorae (with where their agents are) and their agents'
latest VIP probes, in one read connection; and which load balancers an operator's word
(an id or a name) names."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.engine import Connection

from lbaas.db.graph_loader import graph_from_tree
from lbaas.db.object_metrics import as_dict
from lbaas.db.stored_tree import StoredLoadBalancer
from lbaas.db.tables import (
    AmphoraRow,
    ConvergeJobRow,
    HostRow,
    ListenerStatsRow,
    LoadBalancerRow,
    table_of,
)
from lbaas.db.tree_loader import load_tree
from lbaas.model.enums import AmphoraStatus, ProvisioningStatus
from lbaas.model.fleet import HostAddress
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
    agent: HostAddress | None = None
    """Its enrolled host's agent; None for an amphora of the configured agent."""


@dataclass(frozen=True)
class ProbeFacts:
    """One amphora's agent's latest probe of a listener's VIP:port, as its last heartbeat
    carried it (``lbaas.amphora.vip_probe``)."""

    amphora_id: str
    answered: bool


@dataclass(frozen=True)
class LoadBalancerFacts:
    tree: StoredLoadBalancer
    graph: LoadBalancer
    job: JobFacts | None
    amphorae: list[AmphoraFacts]
    probes: dict[str, list[ProbeFacts]] = field(default_factory=dict)
    """Per listener id: the agents' probe results; absent where no agent probes it."""


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
    c, h = table_of(AmphoraRow).c, table_of(HostRow).c
    rows = conn.execute(
        select(
            c.id,
            c.status,
            c.host,
            c.last_heartbeat_at,
            c.failover_pending,
            h.id,
            h.address,
            h.port,
        )
        .outerjoin(table_of(HostRow), h.id == c.compute_id)
        .where(c.loadbalancer_id == loadbalancer_id, c.status != AmphoraStatus.DELETED.value)
        .order_by(c.created_at)
    )
    return [
        AmphoraFacts(
            *row[:5], agent=None if row[5] is None else HostAddress(row[5], row[6], row[7])
        )
        for row in rows
    ]


def _probes(conn: Connection, loadbalancer_id: str) -> dict[str, list[ProbeFacts]]:
    c = table_of(ListenerStatsRow).c
    query = select(c.listener_id, c.amphora_id, c.last).where(c.loadbalancer_id == loadbalancer_id)
    found: dict[str, list[ProbeFacts]] = {}
    for listener_id, amphora_id, last in conn.execute(query.order_by(c.amphora_id)):
        values = as_dict(last)
        if int(values.get("vip_probes", 0)):
            answered = bool(int(values.get("vip_answered", 0)))
            found.setdefault(str(listener_id), []).append(ProbeFacts(str(amphora_id), answered))
    return found


def load_balancer_facts(conn: Connection, loadbalancer_id: str) -> LoadBalancerFacts | None:
    """None when no such load balancer exists (or it is DELETED)."""
    tree = load_tree(conn, loadbalancer_id)
    if tree is None:
        return None
    graph = graph_from_tree(conn, tree)
    return LoadBalancerFacts(
        tree,
        graph,
        _job(conn, loadbalancer_id),
        _amphorae(conn, loadbalancer_id),
        _probes(conn, loadbalancer_id),
    )


def load_balancer_ids(conn: Connection, word: str) -> list[str]:
    """The load balancers ``word`` names: the one with that id if it exists (an id wins
    over a name), else every one so named; DELETED ones are not counted."""
    c = table_of(LoadBalancerRow).c
    alive = c.provisioning_status != ProvisioningStatus.DELETED.value
    by_id = conn.execute(select(c.id).where(c.id == word, alive)).scalars().all()
    if by_id:
        return [str(i) for i in by_id]
    named = conn.execute(select(c.id).where(c.name == word, alive).order_by(c.id))
    return [str(i) for i in named.scalars()]
