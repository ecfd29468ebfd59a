"""Storage of the durable converge queue: enqueue, claim with a lease, renew, settle.

One row per load balancer (``ConvergeJobRow``) makes the queue's guarantees fall out of
the schema: a load balancer can have only one claim at a time (its row carries one lease),
changes that arrive while it is queued merge (they only bump ``requested_gen``), and a
worker that dies simply stops renewing its lease, after which any worker may claim the row
again. Claims use ``FOR UPDATE SKIP LOCKED`` on PostgreSQL so several workers never wait
on each other; SQLite serialises writers with ``BEGIN IMMEDIATE`` instead.

Every settling call is fenced: it only takes effect if the caller still owns the lease for
the generation it claimed, so a worker that lost its lease (paused too long) cannot
overwrite the work of the worker that took over.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from lbaas.db.engine import Database
from lbaas.db.tables import ConvergeJobRow, LoadBalancerRow


@dataclass(frozen=True)
class Claim:
    """A worker's right to converge one load balancer up to ``generation``."""

    loadbalancer_id: str
    generation: int
    owner: str
    attempts: int
    rebuild: bool


class Fence(Enum):
    """Where a claim stands when its result is about to be written."""

    CURRENT = "current"  # still owned, nothing newer requested
    SUPERSEDED = "superseded"  # still owned, but a newer change arrived meanwhile
    LOST = "lost"  # the lease was taken over: write nothing


def enqueue_converge(
    session: Session, loadbalancer_id: str, now: float, *, rebuild: bool = False
) -> None:
    """Ask for the load balancer to be converged, inside the caller's transaction."""
    row = session.get(ConvergeJobRow, loadbalancer_id, with_for_update=True)
    if row is None:
        session.add(
            ConvergeJobRow(
                loadbalancer_id=loadbalancer_id,
                requested_gen=1,
                done_gen=0,
                claimed_gen=0,
                rebuild=rebuild,
                attempts=0,
                next_attempt_at=now,
                updated_at=now,
            )
        )
        return
    row.requested_gen += 1
    row.rebuild = row.rebuild or rebuild
    # A fresh change is worth trying at once, even if an older attempt is backing off.
    row.next_attempt_at = min(row.next_attempt_at, now)
    row.attempts = 0
    row.updated_at = now


def claim_next(db: Database, owner: str, now: float, lease_seconds: float) -> Claim | None:
    """Claim the most overdue runnable job, or return None if there is none."""
    with db.write() as session:
        query = (
            select(ConvergeJobRow)
            .where(
                ConvergeJobRow.requested_gen > ConvergeJobRow.done_gen,
                ConvergeJobRow.next_attempt_at <= now,
                or_(
                    ConvergeJobRow.lease_expires_at.is_(None),
                    ConvergeJobRow.lease_expires_at < now,
                ),
            )
            .order_by(ConvergeJobRow.next_attempt_at)
            .limit(1)
            .with_for_update(skip_locked=True)
        )
        row = session.scalars(query).first()
        if row is None:
            return None
        row.lease_owner = owner
        row.lease_expires_at = now + lease_seconds
        row.claimed_gen = row.requested_gen
        row.updated_at = now
        return Claim(row.loadbalancer_id, row.claimed_gen, owner, row.attempts, row.rebuild)


def renew_leases(
    db: Database, owner: str, loadbalancer_ids: list[str], now: float, lease_seconds: float
) -> None:
    """Push the leases this worker holds forward; called while converges run."""
    if not loadbalancer_ids:
        return
    with db.write() as session:
        session.execute(
            update(ConvergeJobRow)
            .where(
                ConvergeJobRow.loadbalancer_id.in_(loadbalancer_ids),
                ConvergeJobRow.lease_owner == owner,
            )
            .values(lease_expires_at=now + lease_seconds)
        )


def check_fence(session: Session, claim: Claim) -> Fence:
    """Lock the job row and tell whether the claim may still write its result."""
    row = session.get(ConvergeJobRow, claim.loadbalancer_id, with_for_update=True)
    if row is None or row.lease_owner != claim.owner or row.claimed_gen != claim.generation:
        return Fence.LOST
    if row.requested_gen > claim.generation:
        return Fence.SUPERSEDED
    return Fence.CURRENT


def settle_done(session: Session, claim: Claim, now: float, error: str | None = None) -> None:
    """Record that the claimed generation is finished (successfully, or given up)."""
    row = session.get(ConvergeJobRow, claim.loadbalancer_id, with_for_update=True)
    if row is None or row.lease_owner != claim.owner:
        return
    row.done_gen = claim.generation
    row.lease_owner = None
    row.lease_expires_at = None
    row.attempts = 0
    row.last_error = error[:2048] if error else None
    if claim.rebuild and row.requested_gen == claim.generation:
        row.rebuild = False
    row.updated_at = now


def settle_retry(db: Database, claim: Claim, now: float, delay: float, error: str) -> None:
    """Release the lease and schedule another attempt after ``delay`` seconds."""
    with db.write() as session:
        row = session.get(ConvergeJobRow, claim.loadbalancer_id, with_for_update=True)
        if row is None or row.lease_owner != claim.owner:
            return
        row.lease_owner = None
        row.lease_expires_at = None
        row.attempts = claim.attempts + 1
        row.next_attempt_at = now + delay
        row.last_error = error[:2048]
        row.updated_at = now


def forget(session: Session, loadbalancer_id: str) -> None:
    """Drop the job row of a load balancer that no longer exists."""
    session.execute(delete(ConvergeJobRow).where(ConvergeJobRow.loadbalancer_id == loadbalancer_id))


def last_error(session: Session, loadbalancer_id: str) -> tuple[str | None, int, int] | None:
    """(last error, requested generation, done generation) of a load balancer's job."""
    row = session.get(ConvergeJobRow, loadbalancer_id)
    if row is None:
        return None
    return row.last_error, row.requested_gen, row.done_gen


def enqueue_resync(db: Database, now: float) -> int:
    """Queue a converge for every ACTIVE load balancer with nothing outstanding."""
    with db.write() as session:
        active = set(
            session.scalars(
                select(LoadBalancerRow.id).where(LoadBalancerRow.provisioning_status == "ACTIVE")
            )
        )
        outstanding = set(
            session.scalars(
                select(ConvergeJobRow.loadbalancer_id).where(
                    ConvergeJobRow.requested_gen > ConvergeJobRow.done_gen
                )
            )
        )
        targets = sorted(active - outstanding)
        for lb_id in targets:
            enqueue_converge(session, lb_id, now)
        return len(targets)
