"""Freeing the leases of a worker process known to be dead: exactly its own, at once."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue
from lbaas.db.migrate import upgrade_database
from lbaas.jobs.siblings import DeadSiblingWatch
from lbaas.jobs.slot import WorkerSlot


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


def test_a_worker_slot_frees_only_its_own_dead_predecessors_leases(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'slots.sqlite'}")
    upgrade_database(database)
    now = time.time()
    first = WorkerSlot(tmp_path / "state")
    second = WorkerSlot(tmp_path / "state")
    try:
        # Both held at once: two slots. Another state directory: another tag.
        assert (first.number, second.number) == (0, 1)
        other = WorkerSlot(tmp_path / "other-state")
        assert other.number == 0 and other.tag != first.tag
        host = socket.gethostname()
        owners = [
            f"{host}:{pid}:{slot.tag}:x" for pid, slot in ((7, first), (8, second), (9, other))
        ]
        for n, owner in enumerate(owners):
            with database.write() as session:
                job_queue.enqueue_converge(session, f"lb-{n}", now, new=True)
            assert job_queue.claim_next(database, owner, now, lease_seconds=600) is not None
        other.close()
        first.close()  # its holder "died": the next worker takes slot 0 and frees it
        successor = WorkerSlot(tmp_path / "state")
        assert successor.number == 0 and successor.tag == first.tag
        assert successor.release_earlier_claims(database) == 1
        freed = job_queue.claim_next(database, "host:3:cccc", now, lease_seconds=600)
        assert freed is not None and freed.loadbalancer_id == "lb-0"
        assert job_queue.claim_next(database, "host:3:cccc", now, lease_seconds=600) is None
        successor.close()
    finally:
        second.close()
        database.dispose()


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_a_live_worker_frees_the_leases_of_a_dead_sibling_slot_only(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'siblings.sqlite'}"
    else:
        url = request.getfixturevalue("postgres").create("siblings")
    database = Database(url)
    upgrade_database(database)
    now = time.time()
    survivor = WorkerSlot(tmp_path / "state")
    dead = WorkerSlot(tmp_path / "state")
    alive = WorkerSlot(tmp_path / "state")
    elsewhere = WorkerSlot(tmp_path / "other-state")
    woken: list[int] = []
    try:
        host = socket.gethostname()
        holders = {"lb-own": survivor, "lb-dead": dead, "lb-alive": alive, "lb-other": elsewhere}
        for lb, slot in holders.items():
            with database.write() as session:
                job_queue.enqueue_converge(session, lb, now, new=True)
            claim = job_queue.claim_next(database, f"{host}:4:{slot.tag}:x", now, 600)
            assert claim is not None and claim.loadbalancer_id == lb
        watch = DeadSiblingWatch(survivor, database, lambda: woken.append(1))
        # Every holder alive: nothing freed, nobody woken.
        assert watch.check() == 0 and woken == []
        dead.close()  # its process "died": the kernel dropped its slot lock
        elsewhere.close()  # another installation's dead worker is not ours to free
        assert watch.check() == 1 and woken == [1]
        freed = job_queue.claim_next(database, "host:3:cccc", now, lease_seconds=600)
        assert freed is not None and freed.loadbalancer_id == "lb-dead"
        assert job_queue.claim_next(database, "host:3:cccc", now, lease_seconds=600) is None
        # The probe let go of the slot: a new worker still gets the dead one's number.
        successor = WorkerSlot(tmp_path / "state")
        assert successor.number == dead.number
        successor.close()
    finally:
        for slot in (survivor, alive):
            slot.close()
        database.dispose()
