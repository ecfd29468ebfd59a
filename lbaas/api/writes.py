"""The shape of every write: lock the load balancer, check it, mark pending, enqueue.

Octavia's 409 rules live here: a load balancer tree may change only while the load
balancer is ACTIVE, and the change and its "converge load balancer X" job are written in
the same transaction, so no change can exist without the job that applies it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from lbaas.db import job_queue, queries
from lbaas.db.session import Session
from lbaas.db.tables import LoadBalancerRow
from lbaas.errors import Conflict, NotFound
from lbaas.model.enums import ProvisioningStatus

PENDING_UPDATE = ProvisioningStatus.PENDING_UPDATE.value
PENDING_CREATE = ProvisioningStatus.PENDING_CREATE.value
PENDING_DELETE = ProvisioningStatus.PENDING_DELETE.value
ACTIVE = ProvisioningStatus.ACTIVE.value


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def lock_loadbalancer_for_child(session: Session, loadbalancer_id: str) -> LoadBalancerRow:
    """Lock the parent load balancer of a child change; 409 unless it is ACTIVE."""
    lb = queries.lock_loadbalancer(session, loadbalancer_id)
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


def touch(row: Any, now: datetime) -> None:
    row.updated_at = now


def enqueue(
    session: Session, loadbalancer_id: str, *, rebuild: bool = False, new: bool = False
) -> None:
    """Insert (or merge into) the converge job, inside the write's transaction."""
    job_queue.enqueue_converge(session, loadbalancer_id, time.time(), rebuild=rebuild, new=new)
