"""The health checker: a ``CheckSchedule`` run on one asyncio event loop in one thread.

Why asyncio and not a thread per member: a probe is almost entirely waiting (for a
connect, an answer, a timeout), so a single loop can keep hundreds of probes in flight
with one socket each and no thread stacks; a node with a thousand members would otherwise
run a thousand threads. A semaphore bounds the probes in flight (``max_concurrent``) so
a huge pool cannot run the process out of file descriptors. The loop never blocks:
batches of changes go to ``on_changes`` on a single worker thread of their own (they
reprogram nftables, which takes milliseconds to seconds), in order, one at a time.

Other threads call ``set_targets`` and ``states``; the schedule is guarded by a lock and
the loop is woken whenever targets change or a probe ends.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from lbaas.l4.health.base import Prober
from lbaas.l4.health.batch import ChangeBatcher
from lbaas.l4.health.monitor import HealthChange, Target
from lbaas.l4.health.schedule import CheckSchedule

log = logging.getLogger(__name__)

ChangeSink = Callable[[list[HealthChange]], None]
#: Longest the loop sleeps without a reason, so a stop is noticed promptly.
_IDLE = 1.0


class HealthChecker:
    def __init__(
        self,
        prober: Prober,
        on_changes: ChangeSink,
        *,
        batch_count: int = 64,
        batch_delay: float = 0.2,
        max_concurrent: int = 256,
        clock: Callable[[], float] = time.monotonic,
        thread_setup: Callable[[], None] | None = None,
    ) -> None:
        self._prober = prober
        self._on_changes = on_changes
        self._schedule = CheckSchedule(ChangeBatcher(batch_count, batch_delay))
        self._max_concurrent = max_concurrent
        self._clock = clock
        # Run first in the loop's thread, before any socket exists: the amphora's UDP
        # members are probed from inside its network namespace (lbaas.host.netns_thread).
        self._thread_setup = thread_setup
        self._setup_error: Exception | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="l4-health", daemon=True)
        self._sink = ThreadPoolExecutor(max_workers=1, thread_name_prefix="l4-health-sink")
        self._started = threading.Event()
        self.probes = 0  # probes finished, for tests and diagnostics

    def start(self) -> None:
        """Start the loop's thread; raises what ``thread_setup`` raised, if it failed."""
        self._thread.start()
        self._started.wait(10)
        if self._setup_error is not None:
            raise self._setup_error

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping = True
        self._poke()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._sink.shutdown(wait=True)

    def set_targets(self, group: str, targets: Iterable[Target]) -> None:
        """Probe exactly ``targets`` for ``group`` from now on (empty: forget the group)."""
        with self._lock:
            self._schedule.set_group(group, targets, self._clock())
        self._poke()

    def states(self, group: str) -> dict[str, bool]:
        """Each of ``group``'s targets: healthy or not, as the checker sees it now."""
        with self._lock:
            return self._schedule.states(group)

    def _poke(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            loop.call_soon_threadsafe(wake.set)

    def _run(self) -> None:
        if self._thread_setup is not None:
            try:
                self._thread_setup()
            except Exception as exc:  # noqa: BLE001 - handed to start(), which raises it
                self._setup_error = exc
                self._started.set()
                return
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._started.set()
        limit = asyncio.Semaphore(self._max_concurrent)
        running: set[asyncio.Task[None]] = set()
        while not self._stopping:
            now = self._clock()
            with self._lock:
                due = self._schedule.due(now)
                batch = self._schedule.take_batch(now)
                wakeup = self._schedule.next_wakeup()
            for target in due:
                task = asyncio.create_task(self._probe(target, limit))
                running.add(task)
                task.add_done_callback(running.discard)
            if batch:
                self._sink.submit(self._deliver, batch)
            sleep = _IDLE if wakeup is None else min(_IDLE, max(0.0, wakeup - self._clock()))
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), sleep)
            except TimeoutError:
                pass
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    async def _probe(self, target: Target, limit: asyncio.Semaphore) -> None:
        async with limit:
            try:
                ok = await asyncio.wait_for(self._prober.probe(target), target.monitor.timeout)
            except (TimeoutError, OSError):
                ok = False
            except Exception:  # noqa: BLE001 - a probe's bug counts as a failed check
                log.exception("health probe of %s failed unexpectedly", target.key)
                ok = False
        with self._lock:
            self._schedule.record(target, ok, self._clock())
        self.probes += 1
        assert self._wake is not None
        self._wake.set()

    def _deliver(self, batch: list[HealthChange]) -> None:
        # Top of the sink thread: a failing consumer must not stop later batches.
        try:
            self._on_changes(batch)
        except Exception:  # noqa: BLE001 - logged; the next batch is delivered anyway
            log.exception("health changes %s could not be applied", batch)
