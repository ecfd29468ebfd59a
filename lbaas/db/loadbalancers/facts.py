"""What ``lbaas diagnose`` reads about one load balancer: its stored tree, its desired
graph, its converge job, its amphorae and their agents' latest VIP probes, in one read
connection. Each part is read where its data lives (``job_queue``, ``amphora_repo``,
``stats_repo``); this module puts them together."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.engine import Connection

from lbaas.db.amphorae.amphora_repo import AmphoraFacts, amphora_facts
from lbaas.db.health.stats_repo import ProbeFacts, vip_probes
from lbaas.db.jobs.job_queue import JobFacts, job_facts
from lbaas.db.loadbalancers.graph_loader import graph_from_tree
from lbaas.db.loadbalancers.stored_tree import StoredLoadBalancer
from lbaas.db.loadbalancers.tree_loader import load_tree
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
