"""The worker: threads that claim converge jobs, a lease keeper, the periodic resync and
housekeeping.

Each thread claims one job at a time, so one process converges up to ``threads`` load
balancers in parallel and never the same one twice (the job row holds one lease). An idle
thread sleeps until ``notify()`` — called by an in-process API right after its commit, or
by the wake-up listeners for other processes — or until ``poll_interval`` passes. A
keeper thread renews the leases of running jobs, so a long converge is not taken over,
while a worker that dies stops renewing and its jobs are claimed again when the lease
runs out. Housekeeping purges DELETED records older than ``deleted_retention``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from lbaas.config import WorkerSettings
from lbaas.coordination.leader import Leadership
from lbaas.db import housekeeping
from lbaas.db.engine import Database
from lbaas.db.housekeeping import Purged
from lbaas.db.jobs import job_queue
from lbaas.jobs.resync_check import ResyncPacing, VersionCheck, check_due
from lbaas.jobs.runner import JobRunner

LOG = logging.getLogger(__name__)


def owner_prefix(pid: int) -> str:
    """How the lease owners of the worker process ``pid`` on this host begin."""
    return f"{socket.gethostname()}:{pid}:"


class Worker:
    def __init__(
        self,
        database: Database,
        runner: JobRunner,
        settings: WorkerSettings,
        clock: Callable[[], float] = time.time,
        slot_tag: str = "",
        housekeeping: Leadership | None = None,
        version_check: VersionCheck | None = None,
    ) -> None:
        """``housekeeping``: the election for the purge when several workers run (None:
        this worker purges); ``version_check``: how the resync asks a provider which load
        balancers its data plane holds at the version last sent (``resync_check``; None:
        every load balancer due is converged)."""
        self._db = database
        self._version_check = version_check
        self._housekeeping = housekeeping
        self._runner = runner
        self._settings = settings
        self._clock = clock
        # The slot tag (``lbaas.jobs.slot``) lets the next holder of the slot free these
        # leases at once if this process dies.
        tag = f"{slot_tag}:" if slot_tag else ""
        self.owner = f"{owner_prefix(os.getpid())}{tag}{uuid.uuid4().hex[:8]}"
        self._wake = threading.Condition()
        self._pending_wakeups = 0
        self._stop = threading.Event()
        self._running: set[str] = set()
        self._running_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        # Stopped last: leases are renewed while stopping converges finish.
        self._keeper_stop = threading.Event()
        self._keeper: threading.Thread | None = None

    def notify(self) -> None:
        """Wake an idle thread: a job was just committed."""
        with self._wake:
            self._pending_wakeups += 1
            self._wake.notify()

    def start(self) -> None:
        for i in range(self._settings.threads):
            self._spawn(self._claim_loop, f"converge-{i}")
        self._keeper = threading.Thread(target=self._lease_loop, name="lease-keeper", daemon=True)
        self._keeper.start()
        self._spawn(self._resync_loop, "resync")
        if self._settings.deleted_retention > 0:
            if self._housekeeping is not None:
                self._housekeeping.start()
            self._spawn(self._housekeeping_loop, "housekeeping")

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, timeout: float | None = None) -> None:
        """Let running converges finish for up to ``timeout`` (``worker.stop_timeout``)
        seconds, then free the leases of those still running so another worker takes
        them over at once instead of after the lease."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        deadline = time.monotonic() + (self._settings.stop_timeout if timeout is None else timeout)
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._keeper_stop.set()
        if self._keeper is not None:
            self._keeper.join(2)
        if self._housekeeping is not None and self._settings.deleted_retention > 0:
            self._housekeeping.stop()  # released: another worker purges at once
        with self._running_lock:
            unfinished = sorted(self._running)
        if unfinished:
            LOG.warning(
                "stopping with %d converge(s) unfinished; freeing their leases: %s",
                len(unfinished),
                ", ".join(unfinished),
            )
            job_queue.release_leases_of(self._db, self.owner)

    def _idle_wait(self) -> None:
        with self._wake:
            if self._pending_wakeups == 0:
                self._wake.wait(self._settings.poll_interval)
            self._pending_wakeups = max(0, self._pending_wakeups - 1)

    def run_once(self) -> bool:
        """Claim and run one job if there is one; True if a job ran."""
        claim = job_queue.claim_next(
            self._db, self.owner, self._clock(), self._settings.lease_seconds
        )
        if claim is None:
            return False
        with self._running_lock:
            self._running.add(claim.loadbalancer_id)
        try:
            self._runner.run(claim)
        finally:
            with self._running_lock:
                self._running.discard(claim.loadbalancer_id)
        return True

    def _claim_loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self.run_once():
                    continue
            except Exception:  # noqa: BLE001 - top of the loop: log, back off, go on
                LOG.exception("worker loop error")
                self._stop.wait(self._settings.poll_interval)
                continue
            self._idle_wait()

    def _lease_loop(self) -> None:
        interval = max(0.05, self._settings.lease_seconds / 3)
        while not self._keeper_stop.wait(interval):
            with self._running_lock:
                running = sorted(self._running)
            try:
                job_queue.renew_leases(
                    self._db, self.owner, running, self._clock(), self._settings.lease_seconds
                )
            except Exception:  # noqa: BLE001 - top of the loop
                LOG.exception("lease renewal failed")

    def purge_expired(self) -> Purged:
        """Remove DELETED records older than ``deleted_retention``."""
        cutoff = self._clock() - self._settings.deleted_retention
        deleted_before = datetime.fromtimestamp(cutoff, UTC).replace(tzinfo=None)
        return housekeeping.purge_deleted(self._db, deleted_before)

    def _housekeeping_loop(self) -> None:
        while not self._stop.wait(self._settings.housekeeping_interval):
            if self._housekeeping is not None and not self._housekeeping.leads():
                continue  # another worker leads the purge
            try:
                purged = self.purge_expired()
                if purged.loadbalancers or purged.amphorae:
                    LOG.info(
                        "purged %d deleted load balancers and %d deleted amphorae",
                        purged.loadbalancers,
                        purged.amphorae,
                    )
            except Exception:  # noqa: BLE001 - top of the loop
                LOG.exception("housekeeping failed")

    def _resync_loop(self) -> None:
        # Spread the resync out: a tick every twelfth of the interval queues the load
        # balancers whose last converge is older than the interval, a twelfth of them at
        # most, so each is re-converged about once per interval without a burst of every
        # load balancer at once (which stalled the API every minute at a few thousand).
        interval = self._settings.resync_interval
        ticks = 12
        pacing = ResyncPacing(interval)
        while not self._stop.wait(interval / ticks):
            try:
                if self._version_check is not None:
                    now = self._clock()
                    checked = check_due(self._db, self._version_check, now, interval)
                    if checked.held:
                        LOG.info("resync checked %d load balancers: their data planes hold "
                                 "what was last sent", checked.held)  # fmt: skip
                    if not pacing.may_converge(checked, now):
                        LOG.info("resync: %d load balancers not checked yet (a data plane "
                                 "did not answer): converges wait", checked.undecided)  # fmt: skip
                        continue
                share = job_queue.count_active(self._db) // ticks + 1
                count = job_queue.enqueue_resync_share(self._db, self._clock(), interval, share)
                if count:
                    LOG.info("resync queued %d load balancers", count)
                    self.notify()
            except Exception:  # noqa: BLE001 - top of the loop
                LOG.exception("resync failed")
