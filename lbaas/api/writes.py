"""The one shape of every tree write: lock the load balancer, check, mark pending, enqueue.

Octavia's 409 rules live here: a load balancer tree may change only while the load
balancer is ACTIVE, and the change and its "converge load balancer X" job are written in
the same transaction, so no change can exist without the job that applies it.

A handler opens ``tree_write(services)``, looks its rows up (404, then 403), takes the
lock through the ``TreeWrite`` (``lock_child``, ``lock_pool`` or ``lock_own``: 409 while
the tree is busy), writes what is particular to its resource, then says what changed with
``changed(lb, update=..., delete=...)``: that marks the rows PENDING_*, enqueues the
converge job and, once the transaction commits, wakes the workers. ``view`` flushes and
renders the response inside the transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

from lbaas.api.services import ApiServices
from lbaas.db.jobs import job_queue
from lbaas.db.loadbalancers import loadbalancer_repo, pool_repo
from lbaas.db.session import Session
from lbaas.db.tables import ListenerRow, LoadBalancerRow, PoolRow
from lbaas.errors import Conflict, NotFound
from lbaas.model.enums import ProvisioningStatus

PENDING_UPDATE = ProvisioningStatus.PENDING_UPDATE.value
PENDING_CREATE = ProvisioningStatus.PENDING_CREATE.value
PENDING_DELETE = ProvisioningStatus.PENDING_DELETE.value
ACTIVE = ProvisioningStatus.ACTIVE.value
ERROR = ProvisioningStatus.ERROR.value

R = TypeVar("R")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def lock_loadbalancer_for_child(session: Session, loadbalancer_id: str) -> LoadBalancerRow:
    """Lock the parent load balancer of a child change; 409 unless it is ACTIVE."""
    lb = loadbalancer_repo.lock_loadbalancer(session, loadbalancer_id)
    if lb is None:
        raise NotFound.of("Load Balancer", loadbalancer_id)
    if lb.provisioning_status != ACTIVE:
        raise Conflict(f"Load Balancer {loadbalancer_id} is immutable and cannot be updated.")
    return lb


def require_lb_state(lb: LoadBalancerRow, *allowed: str) -> None:
    """LB-level PUT/DELETE/failover: 409 with Octavia's 'Invalid state' message."""
    if lb.provisioning_status not in allowed:
        raise Conflict(f"Invalid state {lb.provisioning_status} of loadbalancer resource {lb.id}")


def require_active(row: Any, kind: str) -> None:
    """A parent pool or policy must be ACTIVE for its members or rules to change."""
    if row.provisioning_status != ACTIVE:
        raise Conflict(f"{kind} {row.id} is immutable and cannot be updated.")


def mark(rows: Iterable[Any], status: str, now: datetime) -> None:
    for row in rows:
        if row.provisioning_status != status:
            row.provisioning_status = status
            row.updated_at = now


def enqueue(
    session: Session, loadbalancer_id: str, *, rebuild: bool = False, new: bool = False
) -> None:
    """Insert (or merge into) the converge job, inside the write's transaction."""
    job_queue.enqueue_converge(session, loadbalancer_id, time.time(), rebuild=rebuild, new=new)


class TreeWrite:
    """One write transaction on a load balancer tree (see the module docstring)."""

    def __init__(self, session: Session, now: datetime, services: ApiServices) -> None:
        self.session = session
        self.now = now
        self.services = services
        self.enqueued = False

    def lock_child(self, loadbalancer_id: str, *rows: Any) -> LoadBalancerRow:
        """Lock the load balancer of a child change (409 unless ACTIVE), then re-read
        ``rows`` so the change starts from what the lock protects."""
        lb = lock_loadbalancer_for_child(self.session, loadbalancer_id)
        for row in rows:
            self.session.refresh(row)
        return lb

    def lock_pool(self, pool: PoolRow, *rows: Any) -> tuple[LoadBalancerRow, list[ListenerRow]]:
        """Lock the tree for a member or monitor change: the load balancer row first (it
        serialises every change of the tree), then 409 unless the pool and the load
        balancer are ACTIVE. Returns the load balancer and the listeners using the pool."""
        lb = loadbalancer_repo.lock_loadbalancer(self.session, pool.loadbalancer_id)
        if lb is None:
            raise NotFound.of("Load Balancer", pool.loadbalancer_id)
        self.session.refresh(pool)
        require_active(pool, "Pool")
        if lb.provisioning_status != ACTIVE:
            raise Conflict(f"Load Balancer {lb.id} is immutable and cannot be updated.")
        for row in rows:
            self.session.refresh(row)
        return lb, pool_repo.listeners_using_pool(self.session, pool.id)

    def lock_own(self, lb: LoadBalancerRow, *allowed: str) -> None:
        """A change of the load balancer itself: lock its row, 409 unless in ``allowed``."""
        self.session.refresh(lb, with_for_update=True)
        require_lb_state(lb, *allowed)

    def changed(
        self,
        lb: LoadBalancerRow,
        *,
        update: Iterable[Any] = (),
        delete: Iterable[Any] = (),
        lb_status: str = PENDING_UPDATE,
        rebuild: bool = False,
    ) -> None:
        """Mark ``lb`` (``lb_status``), ``update`` PENDING_UPDATE and ``delete``
        PENDING_DELETE, and enqueue the load balancer's converge job."""
        mark([lb], lb_status, self.now)
        mark(update, PENDING_UPDATE, self.now)
        mark(delete, PENDING_DELETE, self.now)
        enqueue(self.session, lb.id, rebuild=rebuild)
        self.enqueued = True

    def created(self, lb: LoadBalancerRow) -> None:
        """A new load balancer (already PENDING_CREATE): enqueue its first converge."""
        enqueue(self.session, lb.id, new=True)
        self.enqueued = True

    def converge_again(self, loadbalancer_id: str) -> None:
        """Enqueue a converge that changes no status (re-push the configuration)."""
        enqueue(self.session, loadbalancer_id)
        self.enqueued = True

    def view(self, render: Callable[[Session, R], dict[str, Any]], row: R) -> dict[str, Any]:
        """Flush the write and render ``row`` as the response shows it."""
        self.session.flush()
        return render(self.session, row)


@contextmanager
def tree_write(services: ApiServices) -> Iterator[TreeWrite]:
    """A write transaction; after it commits, wake the workers if a job was enqueued."""
    with services.database.write() as session:
        write = TreeWrite(session, utcnow(), services)
        yield write
    if write.enqueued:
        services.notify()
