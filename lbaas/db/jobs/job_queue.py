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
from typing import Any

from sqlalchemy import and_, bindparam, case, func, insert, literal, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from lbaas.db.engine import Database
from lbaas.db.jobs.job_notify import CHANNEL
from lbaas.db.tables import ConvergeJobRow, LoadBalancerRow, table_of
from lbaas.model.enums import ProvisioningStatus


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


_JOBS = ConvergeJobRow.__table__.c


def _enqueue_update(rebuild: bool) -> Any:
    values: dict[str, Any] = {
        "requested_gen": _JOBS.requested_gen + 1,
        # Claims go oldest ``next_attempt_at`` first. A settled job joins the back of the
        # queue: left at its old time, a load balancer created early was claimed before
        # every later one each time it was queued again, and a resync that re-queued
        # converged ones faster than the worker got through them starved the rest for
        # good (bench/scale.py, issue 34). A job already queued keeps its place; a fresh
        # change is worth trying at once, even if an older attempt is backing off.
        "next_attempt_at": case(
            (_JOBS.requested_gen <= _JOBS.done_gen, bindparam("now")),
            (_JOBS.next_attempt_at > bindparam("now"), bindparam("now")),
            else_=_JOBS.next_attempt_at,
        ),
        "attempts": 0,
        "updated_at": bindparam("now"),
    }
    if rebuild:
        values["rebuild"] = True
    return update(ConvergeJobRow).where(_JOBS.loadbalancer_id == bindparam("lb")).values(**values)


_NOTIFY = select(func.pg_notify(literal(CHANNEL), literal("")))
# Built once: enqueueing runs in every write of the API.
_ENQUEUE_UPDATE = {rebuild: _enqueue_update(rebuild) for rebuild in (False, True)}
_ENQUEUE_INSERT = insert(ConvergeJobRow).values(
    loadbalancer_id=bindparam("lb"),
    requested_gen=1,
    done_gen=0,
    claimed_gen=0,
    rebuild=bindparam("rebuild"),
    attempts=0,
    next_attempt_at=bindparam("now"),
    updated_at=bindparam("now"),
)


def enqueue_converge(
    session: Session, loadbalancer_id: str, now: float, *, rebuild: bool = False, new: bool = False
) -> None:
    """Ask for the load balancer to be converged, inside the caller's transaction.

    Callers hold the load balancer's row lock, so update-else-insert cannot race; ``new``
    says the load balancer was created in this transaction, so there is nothing to update.
    """
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        # Delivered at commit to every listening worker (lbaas.db.jobs.job_notify).
        conn.execute(_NOTIFY)
    if not new:
        result = conn.execute(_ENQUEUE_UPDATE[rebuild], {"lb": loadbalancer_id, "now": now})
        if result.rowcount:
            return
    conn.execute(_ENQUEUE_INSERT, {"lb": loadbalancer_id, "now": now, "rebuild": rebuild})


_RUNNABLE = (
    select(_JOBS.loadbalancer_id, _JOBS.requested_gen, _JOBS.attempts, _JOBS.rebuild)
    .where(
        _JOBS.requested_gen > _JOBS.done_gen,
        _JOBS.next_attempt_at <= bindparam("now"),
        or_(_JOBS.lease_expires_at.is_(None), _JOBS.lease_expires_at < bindparam("now")),
    )
    .order_by(_JOBS.next_attempt_at)
    .limit(1)
)
_CLAIMABLE = _RUNNABLE.with_for_update(skip_locked=True)
_TAKE_LEASE = (
    update(ConvergeJobRow)
    .where(_JOBS.loadbalancer_id == bindparam("lb_id"))
    .values(
        lease_owner=bindparam("owner"),
        lease_expires_at=bindparam("expires"),
        claimed_gen=bindparam("generation"),
        updated_at=bindparam("now"),
    )
)


def claim_next(db: Database, owner: str, now: float, lease_seconds: float) -> Claim | None:
    """Claim the most overdue runnable job, or return None if there is none."""
    # Look first without the write lock: most calls find nothing (a worker thread asks
    # once more after every job), and on SQLite a write transaction would queue behind,
    # and hold up, the API's writers.
    with db.read_connection() as conn:
        if conn.execute(_RUNNABLE, {"now": now}).first() is None:
            return None
    with db.write_connection() as conn:
        row = conn.execute(_CLAIMABLE, {"now": now}).first()
        if row is None:
            return None
        lb_id, generation, attempts, rebuild = row
        conn.execute(
            _TAKE_LEASE,
            {
                "lb_id": lb_id,
                "owner": owner,
                "expires": now + lease_seconds,
                "generation": generation,
                "now": now,
            },
        )
        return Claim(lb_id, generation, owner, attempts, bool(rebuild))


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


_FENCE = (
    select(_JOBS.lease_owner, _JOBS.claimed_gen, _JOBS.requested_gen)
    .where(_JOBS.loadbalancer_id == bindparam("lb_id"))
    .with_for_update()
)


def check_fence(session: Session, claim: Claim) -> Fence:
    """Lock the job row and tell whether the claim may still write its result."""
    row = session.connection().execute(_FENCE, {"lb_id": claim.loadbalancer_id}).first()
    if row is None:
        return Fence.LOST
    lease_owner, claimed_gen, requested_gen = row
    if lease_owner != claim.owner or claimed_gen != claim.generation:
        return Fence.LOST
    if requested_gen > claim.generation:
        return Fence.SUPERSEDED
    return Fence.CURRENT


def _settle_statement(rebuild: bool) -> Any:
    values: dict[str, Any] = {
        "done_gen": bindparam("generation"),
        "lease_owner": None,
        "lease_expires_at": None,
        "attempts": 0,
        "last_error": bindparam("error"),
        "updated_at": bindparam("now"),
    }
    if rebuild:
        # The rebuild was done, unless a newer rebuild was asked for meanwhile.
        values["rebuild"] = case(
            (_JOBS.requested_gen == bindparam("generation"), False), else_=_JOBS.rebuild
        )
    return (
        update(ConvergeJobRow)
        .where(_JOBS.loadbalancer_id == bindparam("lb_id"), _JOBS.lease_owner == bindparam("owner"))
        .values(**values)
    )


_SETTLE = {False: _settle_statement(False), True: _settle_statement(True)}


def settle_done(session: Session, claim: Claim, now: float, error: str | None = None) -> None:
    """Record that the claimed generation is finished (successfully, or given up)."""
    session.connection().execute(
        _SETTLE[claim.rebuild],
        {
            "lb_id": claim.loadbalancer_id,
            "owner": claim.owner,
            "generation": claim.generation,
            "error": error[:2048] if error else None,
            "now": now,
        },
    )


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


def expedite(db: Database, jobs: list[tuple[str, int]], now: float) -> int:
    """Make runnable at once the jobs still backing off from the given attempt count
    (their agent answers again); a job retried or changed since is left alone."""
    done = 0
    with db.write() as session:
        for loadbalancer_id, attempts in jobs:
            row = session.get(ConvergeJobRow, loadbalancer_id, with_for_update=True)
            if (
                row is not None
                and row.lease_owner is None
                and row.attempts == attempts
                and row.next_attempt_at is not None
                and row.next_attempt_at > now
            ):
                row.next_attempt_at = now
                done += 1
    return done


def release_leases_of(db: Database, owner_prefix: str, containing: str = "") -> int:
    """Free at once the leases of a worker process known to be dead (owners beginning with
    ``owner_prefix`` and, if given, ``containing`` a tag); how many there were.

    Only for a process whose death is certain (``lbaas serve`` has just reaped its child,
    a worker holds the slot lock of the dead one, a stopping worker frees its own):
    anyone else must wait for the lease to run out, because a worker that merely looks
    silent may still be converging. The fence keeps even a wrong release harmless to the
    data: the old owner's settle would find its lease LOST. The job is runnable at once:
    losing its worker is no failure of the load balancer's, so it waits no backoff.
    """
    owned = _JOBS.lease_owner.startswith(owner_prefix, autoescape=True)
    if containing:
        owned = and_(owned, _JOBS.lease_owner.contains(containing, autoescape=True))
    with db.write_connection() as conn:
        result = conn.execute(
            update(ConvergeJobRow).where(owned).values(lease_owner=None, lease_expires_at=None)
        )
        return int(result.rowcount)


def lease_owners(db: Database, owner_prefix: str, containing: str) -> set[str]:
    """The owners of the leases held now that begin with ``owner_prefix`` and contain
    ``containing`` (a worker looks for its dead siblings among them)."""
    owned = and_(
        _JOBS.lease_owner.startswith(owner_prefix, autoescape=True),
        _JOBS.lease_owner.contains(containing, autoescape=True),
    )
    with db.read_connection() as conn:
        rows = conn.execute(select(_JOBS.lease_owner).where(owned).distinct())
        return {str(owner) for (owner,) in rows}


def last_error(session: Session, loadbalancer_id: str) -> tuple[str | None, int, int] | None:
    """(last error, requested generation, done generation) of a load balancer's job."""
    row = session.get(ConvergeJobRow, loadbalancer_id)
    if row is None:
        return None
    return row.last_error, row.requested_gen, row.done_gen


def _settled_active() -> Any:
    """The ids of ACTIVE load balancers whose queue row has nothing outstanding."""
    lbs = table_of(LoadBalancerRow).c
    return (
        select(_JOBS.loadbalancer_id)
        .join_from(ConvergeJobRow, LoadBalancerRow, lbs.id == _JOBS.loadbalancer_id)
        .where(
            lbs.provisioning_status == ProvisioningStatus.ACTIVE.value,
            _JOBS.requested_gen <= _JOBS.done_gen,
        )
    )


def enqueue_resync(
    db: Database, now: float, interval: float = 0.0, limit: int | None = None
) -> int:
    """Queue a converge for ACTIVE load balancers with nothing outstanding whose last
    converge settled at least ``interval`` seconds ago, oldest first, at most ``limit``."""
    with db.write() as session:
        due = (
            _settled_active()
            .where(_JOBS.updated_at <= now - interval)
            .order_by(_JOBS.updated_at, _JOBS.loadbalancer_id)
        )
        if limit is not None:
            due = due.limit(limit)
        targets = list(session.connection().execute(due).scalars())
        for lb_id in targets:
            enqueue_converge(session, lb_id, now)
        return len(targets)


def enqueue_resync_share(db: Database, now: float, interval: float, share: int) -> int:
    """One tick of the spread-out resync: ``enqueue_resync`` of at most ``share`` less the
    converges already due (queued or running; not those backing off). A worker slower than
    the resync is then never handed more than a tick's share at a time, and what tenants
    asked for meanwhile is not queued behind resync after resync: with a thousand load
    balancers and more, the resync queued faster than one worker converged, and creates
    waited minutes behind the backlog (docs/architecture.md, "Scale")."""
    room = share - count_due(db, now)
    return enqueue_resync(db, now, interval, room) if room > 0 else 0


def count_due(db: Database, now: float) -> int:
    """Converges outstanding and due at ``now``: queued, or running, not backing off."""
    with db.read_connection() as conn:
        found = conn.execute(
            select(func.count())
            .select_from(ConvergeJobRow)
            .where(_JOBS.requested_gen > _JOBS.done_gen, _JOBS.next_attempt_at <= now)
        ).scalar()
    return int(found or 0)


def enqueue_if_settled(
    db: Database, loadbalancer_id: str, now: float, settled_for: float = 0.0
) -> bool:
    """Queue a converge of one load balancer if it is ACTIVE with nothing outstanding
    (what a converge already queued or running will do anyway is not asked twice), and
    its last converge settled at least ``settled_for`` seconds ago (a caller that asks
    every few seconds for as long as something differs asks at most that often)."""
    with db.write() as session:
        found = session.connection().execute(
            _settled_active().where(
                _JOBS.loadbalancer_id == loadbalancer_id,
                _JOBS.updated_at <= now - settled_for,
            )
        )
        if found.first() is None:
            return False
        enqueue_converge(session, loadbalancer_id, now)
        return True


def count_active(db: Database) -> int:
    """How many load balancers are ACTIVE (the resync's share per tick depends on it)."""
    lbs = table_of(LoadBalancerRow).c
    with db.read_connection() as conn:
        found = conn.execute(
            select(func.count())
            .select_from(lbs.id.table)
            .where(lbs.provisioning_status == ProvisioningStatus.ACTIVE.value)
        ).scalar()
    return int(found or 0)


@dataclass(frozen=True)
class JobFacts:
    requested_gen: int
    done_gen: int
    attempts: int
    lease_owner: str | None
    lease_expires_at: float | None
    next_attempt_at: float
    last_error: str | None


def job_facts(conn: Connection, loadbalancer_id: str) -> JobFacts | None:
    """The load balancer's converge job as ``lbaas diagnose`` shows it (None: none yet)."""
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
