"""What ``lbaas diagnose`` reads about one load balancer: its stored tree, its desired
graph, its converge job, its amphorae and their agents' latest VIP probes, in one read
connection. Each part is read where its data lives (``job_queue``, ``amphora_repo``,
``stats_repo``); this module puts them together."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.engine import Connection

from lbaas.db.amphorae.amphora_repo import AmphoraFacts, amphora_facts
from lbaas.db.health.stats_repo import ProbeFacts, vip_probes
from lbaas.db.jobs.job_queue import JobFacts, job_facts
from lbaas.db.loadbalancers.graph_loader import graph_from_tree
from lbaas.db.loadbalancers.stored_tree import StoredLoadBalancer
from lbaas.db.loadbalancers.tree_loader import load_tree
from lbaas.db.tables import LoadBalancerRow, table_of
from lbaas.model.enums import ProvisioningStatus
from lbaas.model.graph import LoadBalancer


@dataclass(frozen=True)
class LoadBalancerFacts:
    tree: StoredLoadBalancer
    graph: LoadBalancer
    job: JobFacts | None
    amphorae: list[AmphoraFacts]
    probes: dict[str, list[ProbeFacts]] = field(default_factory=dict)
    """Per listener id: the agents' probe results; absent where no agent probes it."""


def load_balancer_facts(conn: Connection, loadbalancer_id: str) -> LoadBalancerFacts | None:
    """None when no such load balancer exists (or it is DELETED)."""
    tree = load_tree(conn, loadbalancer_id)
    if tree is None:
        return None
    graph = graph_from_tree(conn, tree)
    return LoadBalancerFacts(
        tree,
        graph,
        job_facts(conn, loadbalancer_id),
        amphora_facts(conn, loadbalancer_id),
        vip_probes(conn, loadbalancer_id),
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
