"""Expediting a job whose agent is back: only one still backing off from that attempt."""

from __future__ import annotations

import time

from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue


def test_only_jobs_still_backing_off_from_that_attempt_are_expedited(database: Database) -> None:
    now = time.time()
    for lb in ("lb-back", "lb-retried", "lb-claimed"):
        with database.write() as session:
            job_queue.enqueue_converge(session, lb, now, new=True)
    for _ in range(3):
        claim = job_queue.claim_next(database, "host:1:w", now, lease_seconds=600)
        assert claim is not None
        job_queue.settle_retry(database, claim, now, 60.0, "agent unreachable")
    # Nothing is runnable for a minute.
    assert job_queue.claim_next(database, "host:2:w", now, lease_seconds=600) is None
    with database.write() as session:  # lb-retried was changed again since (attempt 2)
        job_queue.enqueue_converge(session, "lb-retried", now + 1)
    expedited = job_queue.expedite(
        database, [("lb-back", 1), ("lb-retried", 0), ("lb-gone", 1)], now + 2
    )
    assert expedited == 1
    claim = job_queue.claim_next(database, "host:2:w", now + 2, lease_seconds=600)
    assert claim is not None and claim.loadbalancer_id in {"lb-back", "lb-retried"}
