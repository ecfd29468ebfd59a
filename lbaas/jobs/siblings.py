"""Taking over at once the jobs of a dead worker process of the same host.

A worker killed in the middle of a converge leaves its lease behind. Its successor in the
same slot frees it when it starts (``WorkerSlot.release_earlier_claims``), but on a loaded
host a Python process takes seconds to start, and a crash-looping one may never get
there; the lease would then run out on its own only after ``worker.lease_seconds``. So
every worker process checks, every ``interval`` seconds, the slots named in the leases
held now: one whose lock it can take has no live holder, and its leases are freed
(``WorkerSlot.release_dead_siblings``) and the worker woken to claim them. A wake-up
source like the others: only for speed, the lease still bounds the wait without it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lbaas.background import BackgroundLoop
from lbaas.db.engine import Database
from lbaas.jobs.slot import WorkerSlot

LOG = logging.getLogger(__name__)


class DeadSiblingWatch(BackgroundLoop):
    def __init__(
        self,
        slot: WorkerSlot,
        database: Database,
        notify: Callable[[], None],
        interval: float = 1.0,
    ) -> None:
        self._slot = slot
        self._db = database
        self._notify = notify
        self._interval = interval
        super().__init__("dead-sibling-watch", stop_timeout=5)

    def check(self) -> int:
        """Free the leases of dead sibling workers once; how many were freed."""
        freed = self._slot.release_dead_siblings(self._db)
        if freed:
            LOG.warning("released %d converge job(s) held by a dead worker process", freed)
            self._notify()
        return freed

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check()
            except Exception:  # noqa: BLE001 - top of the loop: the lease still bounds it
                LOG.exception("dead sibling check failed")
