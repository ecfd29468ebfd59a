"""A worker process's stable identity on its host: a slot, held with ``flock``.

A worker's lease owner (``host:pid:<slot tag>:<random>``) changes with every start, so
after a crash nobody could tell that the dead process's leases are certainly dead: they
had to run out. Each ``lbaas worker`` therefore takes the lowest free slot
``<state_dir>/run/worker-slots/<n>.lock`` with an exclusive ``flock``. The kernel drops
the lock when its process dies, so a worker that obtains slot ``n`` knows every earlier
holder of it is gone and frees their leases at once (``release_earlier_claims``): a
restarted worker resumes its own jobs without waiting for the lease to expire.

The tag carries a digest of the state directory, so two installations that share a
database and a host name (but not a state directory) never free each other's leases.

The same lock lets a live worker free the leases of a dead *sibling* without waiting for
its restart (``release_dead_siblings``): a slot that appears in a lease but whose lock can
be taken has no live holder. Under repeated kills a restarted worker can take seconds to
start, longer than the job should stay PENDING (issue 10: target 10 s).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import socket
from pathlib import Path

from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue

# More worker processes than this on one host are not expected; past it, slots repeat
# nothing, they are simply not taken (the worker runs without a slot).
_MAX_SLOTS = 256


class WorkerSlot:
    """The slot this process holds, and the owner tag its leases carry."""

    def __init__(self, state_dir: Path) -> None:
        self._directory = state_dir.resolve() / "run" / "worker-slots"
        digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:8]
        self._digest = digest
        self._fd: int | None = None
        self.number: int | None = None
        self._acquire()
        self.tag = f"{digest}-w{self.number}" if self.number is not None else ""

    def _acquire(self) -> None:
        self._directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        for number in range(_MAX_SLOTS):
            fd = os.open(self._directory / f"{number}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._fd, self.number = fd, number
            return

    def release_earlier_claims(self, database: Database) -> int:
        """Free the leases of this slot's earlier holders (all dead: we hold the lock)."""
        if not self.tag:
            return 0
        return job_queue.release_leases_of(
            database, f"{socket.gethostname()}:", containing=f":{self.tag}:"
        )

    def release_dead_siblings(self, database: Database) -> int:
        """Free the leases held by other slots of this installation on this host whose
        lock is free (their holder is dead); how many were freed."""
        if not self.tag:
            return 0
        host = f"{socket.gethostname()}:"
        slot_of = re.compile(rf":{self._digest}-w(\d+):")
        slots = set()
        for owner in job_queue.lease_owners(database, host, f":{self._digest}-w"):
            found = slot_of.search(owner)
            if found is not None and int(found.group(1)) != self.number:
                slots.add(int(found.group(1)))
        freed = 0
        for number in sorted(slots):
            fd = os.open(self._directory / f"{number}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue  # held: its worker is alive and renews its own leases
            try:
                # Held while freeing, so no new worker takes the slot meanwhile.
                tag = f":{self._digest}-w{number}:"
                freed += job_queue.release_leases_of(database, host, containing=tag)
            finally:
                os.close(fd)
        return freed

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
