"""The converge queue is first come, first served: a settled job queued again goes last."""

from __future__ import annotations

import time

from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue


def _claim_and_settle(database: Database, now: float) -> str:
    claim = job_queue.claim_next(database, "host:1:w", now, lease_seconds=600)
    assert claim is not None
    with database.write() as session:
        job_queue.settle_done(session, claim, now)
    return claim.loadbalancer_id


def test_a_settled_job_queued_again_waits_behind_those_already_queued(
    database: Database,
) -> None:
    now = time.time()
    with database.write() as session:
        job_queue.enqueue_converge(session, "lb-old", now, new=True)
    assert _claim_and_settle(database, now + 1) == "lb-old"
    with database.write() as session:  # queued later than lb-old's first converge
        job_queue.enqueue_converge(session, "lb-new", now + 2, new=True)
    with database.write() as session:  # lb-old again (a resync): after lb-new
        job_queue.enqueue_converge(session, "lb-old", now + 3)
    assert _claim_and_settle(database, now + 4) == "lb-new"
    assert _claim_and_settle(database, now + 5) == "lb-old"


def test_a_job_changed_again_while_queued_keeps_its_place(database: Database) -> None:
    now = time.time()
    with database.write() as session:
        job_queue.enqueue_converge(session, "lb-first", now, new=True)
        job_queue.enqueue_converge(session, "lb-second", now + 1, new=True)
    with database.write() as session:  # merged into the queued job: not sent back
        job_queue.enqueue_converge(session, "lb-first", now + 2)
    assert _claim_and_settle(database, now + 3) == "lb-first"
