"""``converge_load_balancer``: load the graph, ask its provider, settle the statuses.

This is the whole of what a job does, written as three short steps so it can be read at a
glance. It is idempotent — running it again after a crash, or from the periodic resync,
re-applies the same graph — so nothing here needs compensation except what the provider
itself allocates. The job bookkeeping (leases, attempts, generations) belongs to the job
runner; converge only calls the ``settle`` fence it is given, inside its own final
transaction, and writes statuses only if that fence says the claim is still current.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from lbaas.db.engine import Database
from lbaas.db.jobs.job_queue import Claim, Fence
from lbaas.db.jobs.resync_versions import record_applied_version
from lbaas.db.loadbalancers import status_writer
from lbaas.db.loadbalancers.graph_loader import graph_from_tree
from lbaas.db.loadbalancers.tree_loader import load_tree
from lbaas.db.session import Session
from lbaas.errors import PermanentError, SchemaMismatch
from lbaas.model.enums import OperatingStatus, ProvisioningStatus
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.providers.registry import ProviderRegistry

LOG = logging.getLogger(__name__)

OperatingRollup = Callable[[LoadBalancer, HealthReport | None], Mapping[str, OperatingStatus]]


class Settle(Protocol):
    """Checks (and records) inside ``session`` that the claim may write its result."""

    def __call__(self, session: Session, error: str | None = None) -> Fence: ...


@dataclass(frozen=True)
class ConvergeRequest:
    loadbalancer_id: str
    rebuild: bool = False
    # The job's claim; the provider fences its database writes with it.
    fence: Claim = field(kw_only=True)


def utcnow() -> datetime:
    """Timestamps are stored naive in UTC, as Octavia renders them (no zone suffix)."""
    return datetime.now(UTC).replace(tzinfo=None)


class Converger:
    """Runs converges against one database and one set of providers."""

    def __init__(
        self, database: Database, providers: ProviderRegistry, rollup: OperatingRollup
    ) -> None:
        self._db = database
        self._providers = providers
        self._rollup = rollup

    def converge_load_balancer(self, request: ConvergeRequest, settle: Settle) -> None:
        """Make the data plane match the stored graph, then settle statuses."""
        with self._db.read_connection() as conn:
            tree = load_tree(conn, request.loadbalancer_id)
            if tree is None or tree.provisioning_status == ProvisioningStatus.DELETED:
                deleting, graph, snapshot = None, None, None
            else:
                deleting = tree.provisioning_status == ProvisioningStatus.PENDING_DELETE
                graph = graph_from_tree(conn, tree)
                snapshot = status_writer.snapshot_tree(tree)
        if graph is None or snapshot is None:
            with self._db.write() as session:
                settle(session)
            return
        provider = self._providers.get(graph.provider)
        if deleting:
            provider.delete(LoadBalancerId(graph.id), request.fence)
            with self._db.write() as session:
                if settle(session) is not Fence.LOST:
                    status_writer.finish_deleted(session, graph.id, utcnow())
            LOG.info("load balancer %s deleted", graph.id)
            return
        applied = provider.apply(graph, request.fence, rebuild=request.rebuild)
        operating = self._rollup(graph, provider.status(LoadBalancerId(graph.id)))
        with self._db.write() as session:
            if settle(session) is Fence.CURRENT:
                status_writer.finish_applied(session, snapshot, utcnow(), operating)
                record_applied_version(session, graph.id, applied.version)
        LOG.debug("load balancer %s converged", graph.id)

    def give_up(self, request: ConvergeRequest, reason: str, settle: Settle) -> None:
        """Record a permanent failure: ERROR on the load balancer, reason kept.

        When the tree cannot even be read (a column missing from the database), only the
        load balancer's own status is written, so it does not stay PENDING for ever.
        """
        try:
            with self._db.write() as session:
                if settle(session, error=reason) is not Fence.LOST:
                    status_writer.finish_failed(session, request.loadbalancer_id, utcnow())
        except SchemaMismatch:
            with self._db.write() as session:
                if settle(session, error=reason) is not Fence.LOST:
                    status_writer.fail_loadbalancer_row(session, request.loadbalancer_id, utcnow())
        LOG.warning("load balancer %s failed: %s", request.loadbalancer_id, reason)


__all__ = ["ConvergeRequest", "Converger", "PermanentError", "Settle", "utcnow"]
