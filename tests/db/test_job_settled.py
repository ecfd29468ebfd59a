"""Queueing one load balancer again only when it is ACTIVE with nothing outstanding."""

from __future__ import annotations

import time

from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue
from lbaas.model.enums import ProvisioningStatus
from tests.db.rows import add_loadbalancer


def _add(database: Database, lb_id: str, status: ProvisioningStatus) -> None:
    add_loadbalancer(database, lb_id, status, provider="distributed")
    with database.write() as session:
        job_queue.enqueue_converge(session, lb_id, time.time(), new=True)


def _outstanding(database: Database, lb_id: str) -> bool:
    with database.read() as session:
        job = job_queue.last_error(session, lb_id)
    return job is not None and job[1] > job[2]


def test_only_a_settled_active_load_balancer_is_queued_again(database: Database) -> None:
    _add(database, "lb-active", ProvisioningStatus.ACTIVE)
    _add(database, "lb-updating", ProvisioningStatus.PENDING_UPDATE)
    now = time.time()
    assert not job_queue.enqueue_if_settled(database, "lb-active", now)  # first converge queued
    while (claim := job_queue.claim_next(database, "w", now, lease_seconds=60)) is not None:
        with database.write() as session:
            job_queue.settle_done(session, claim, now)
    assert not _outstanding(database, "lb-active")
    assert not job_queue.enqueue_if_settled(database, "lb-updating", now)  # not ACTIVE
    # Settled just now: not within a gap of 5 s; once that has passed, queued.
    assert not job_queue.enqueue_if_settled(database, "lb-active", now, settled_for=5.0)
    assert job_queue.enqueue_if_settled(database, "lb-active", now + 5.0, settled_for=5.0)
    assert _outstanding(database, "lb-active") and not _outstanding(database, "lb-updating")
    assert not job_queue.enqueue_if_settled(database, "lb-active", now)  # already queued
    assert not job_queue.enqueue_if_settled(database, "lb-unknown", now)
