"""Freeing the leases of a worker process known to be dead: exactly its own, at once."""

from __future__ import annotations

import time
from pathlib import Path

from lbaas.db import job_queue
from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database


def test_only_the_dead_processs_leases_are_freed(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'leases.sqlite'}")
    upgrade_database(database)
    now = time.time()
    try:
        for lb in ("lb-a", "lb-b"):
            with database.write() as session:
                job_queue.enqueue_converge(session, lb, now, new=True)
        dead = job_queue.claim_next(database, "host:1:aaaa", now, lease_seconds=600)
        alive = job_queue.claim_next(database, "host:12:bbbb", now, lease_seconds=600)
        assert dead is not None and alive is not None
        # Both leases are held for ten minutes: nothing is claimable.
        assert job_queue.claim_next(database, "host:3:cccc", now, lease_seconds=600) is None
        # "host:1:" must not match the live process 12, nor the other way round.
        assert job_queue.release_leases_of(database, "host:1:") == 1
        again = job_queue.claim_next(database, "host:3:cccc", now, lease_seconds=600)
        assert again is not None and again.loadbalancer_id == dead.loadbalancer_id
        assert job_queue.claim_next(database, "host:3:cccc", now, lease_seconds=600) is None
        # The dead owner's late settle is fenced off: it no longer holds the lease.
        with database.write() as session:
            assert job_queue.check_fence(session, dead) is job_queue.Fence.LOST
    finally:
        database.dispose()
