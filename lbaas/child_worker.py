"""``lbaas serve``'s converge worker, run as a child process and kept running.

The API and the worker used to share one interpreter, and so one GIL: a converge running
beside a request doubled that request's latency on a two-core machine. As a child process
the worker has a core of its own; committed jobs reach it through the wakeup sockets
(``lbaas.jobs.wakeup``) and the database, exactly as they reach a separate
``lbaas worker``. If the child dies it is started again at once, and only a crash loop is
backed off (``lbaas.restart_policy``: more than 3 exits in 60 s, then 1 s doubling up to
30 s); its leased jobs are claimed again at once,
because serve knows the child is dead and frees its leases. If ``serve`` dies, even by
SIGKILL, the child notices its parent is gone (``--parent-pid``) and stops. On SIGTERM
serve stops the child in order (``stop``): SIGTERM, ``worker.stop_timeout`` for its
converges to finish or be freed, SIGKILL if it is still there 5 s later.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable

from lbaas.restart_policy import RestartPolicy

LOG = logging.getLogger(__name__)


class ChildWorker:
    """Start a child process, restart it when it exits (backing off a crash loop), stop it
    on request."""

    def __init__(
        self,
        command: list[str],
        on_death: Callable[[int], None] = lambda _pid: None,
        stop_timeout: float = 15.0,
        policy: RestartPolicy | None = None,
    ) -> None:
        self._command = command
        self._policy = policy if policy is not None else RestartPolicy()
        # Told the pid of a child that died, before the next one starts.
        self._on_death = on_death
        self._stop_timeout = stop_timeout
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._supervise, name="child-worker", daemon=True)

    def start(self) -> None:
        self._spawn()
        self._thread.start()

    def _spawn(self) -> None:
        with self._lock:
            # Under the lock: a stop() that has begun must not find a fresh child behind it.
            if not self._stopping.is_set():
                self._process = subprocess.Popen(self._command)

    def _supervise(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                process = self._process
            assert process is not None
            code = process.wait()
            if self._stopping.is_set():
                return
            delay = self._policy.exited()
            LOG.error(
                "worker process %d exited with %d; restarting in %.0f s", process.pid, code, delay
            )
            try:
                self._on_death(process.pid)
            except Exception:  # noqa: BLE001 - the restart must happen regardless
                LOG.exception("cleaning up after worker process %d failed", process.pid)
            if delay and self._stopping.wait(delay):
                return
            self._spawn()

    def stop(self) -> None:
        """SIGTERM the child (it finishes or frees its running converges), SIGKILL it if
        it has not exited after ``stop_timeout`` seconds; then free whatever it held."""
        with self._lock:
            self._stopping.set()
            process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(self._stop_timeout)
            except subprocess.TimeoutExpired:
                LOG.warning(
                    "worker process %d did not stop within %.0f s; killing it",
                    process.pid,
                    self._stop_timeout,
                )
                process.kill()
                process.wait()
        self._supervisor_done()
        try:
            # Reaped, so certainly dead: a hung child's leases need not run out.
            self._on_death(process.pid)
        except Exception:  # noqa: BLE001 - stopping goes on regardless
            LOG.exception("cleaning up after worker process %d failed", process.pid)

    def _supervisor_done(self) -> None:
        # The supervisor may be inside on_death for an earlier child; let it finish.
        if self._thread.is_alive():
            self._thread.join(5)
