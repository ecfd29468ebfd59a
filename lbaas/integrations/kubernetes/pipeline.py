"""Kuryr's event pipeline, done right: per-object order, concurrency across objects,
coalescing, jittered exponential backoff.

Work is keyed by object (``namespace/name``) and level-triggered: an event only marks its
key dirty, and the handler reads the newest state when it runs. So a burst of events for
one key while it is queued or running becomes one more run (coalescing), a key is never
handled by two workers at once (order), and different keys run on up to ``workers``
workers at once. A ``TemporaryError`` (or any unexpected exception) retries the key after
``base · 2^attempt`` seconds, capped, with "equal jitter" (a uniform draw in the upper
half) so that a storm of 409s does not retry in lock step; a ``PermanentError`` is
reported once and the key waits for its next event.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from lbaas.errors import PermanentError, TemporaryError

LOG = logging.getLogger(__name__)

Handler = Callable[[str, bool], Awaitable[None]]
"""``handler(key, force)``: ``force`` asks for a check against Octavia even if the
recorded state says nothing changed (resyncs)."""
PermanentReporter = Callable[[str, PermanentError], Awaitable[None]]


@dataclass(frozen=True)
class Backoff:
    base: float = 0.5
    cap: float = 60.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        ceiling = min(self.cap, self.base * (2 ** min(attempt, 30)))
        return rng.uniform(ceiling / 2, ceiling)


@dataclass
class PipelineCounters:
    enqueued: int = 0
    runs: int = 0
    retries: int = 0
    permanent: int = 0
    runs_by_key: dict[str, int] = field(default_factory=dict)


class WorkQueue:
    def __init__(
        self,
        handler: Handler,
        report_permanent: PermanentReporter,
        workers: int = 8,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._handler = handler
        self._report = report_permanent
        self._workers = workers
        self._backoff = backoff or Backoff()
        self._rng = rng or random.Random()
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._dirty: dict[str, bool] = {}
        self._running: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._attempts: dict[str, int] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self.counters = PipelineCounters()

    def enqueue(self, key: str, force: bool = False, delay: float = 0.0) -> None:
        """Mark ``key`` dirty; it runs once more, after any run already under way and, with
        ``delay``, no sooner than that (events arriving meanwhile join the same run)."""
        self.counters.enqueued += 1
        if key in self._dirty:
            self._dirty[key] = self._dirty[key] or force
            return
        self._dirty[key] = force
        self._idle.clear()
        if key in self._running or key in self._timers:
            return
        if delay > 0:
            loop = asyncio.get_running_loop()
            self._timers[key] = loop.call_later(delay, self._retry_now, key, force)
        else:
            self._ready.put_nowait(key)

    def busy(self) -> bool:
        return bool(self._dirty or self._running or self._timers)

    async def wait_idle(self) -> None:
        while self.busy():
            self._idle.clear()
            await self._idle.wait()

    async def run(self) -> None:
        """Run the workers until cancelled."""
        async with asyncio.TaskGroup() as group:
            for index in range(self._workers):
                group.create_task(self._work(), name=f"kube-worker-{index}")

    async def _work(self) -> None:
        while True:
            key = await self._ready.get()
            if key in self._running or key not in self._dirty:
                continue
            force = self._dirty.pop(key)
            self._running.add(key)
            try:
                await self._run_one(key, force)
            finally:
                self._running.discard(key)
                if key in self._dirty and key not in self._timers:
                    self._ready.put_nowait(key)
                if not self.busy():
                    self._idle.set()

    async def _run_one(self, key: str, force: bool) -> None:
        self.counters.runs += 1
        self.counters.runs_by_key[key] = self.counters.runs_by_key.get(key, 0) + 1
        try:
            await self._handler(key, force)
        except PermanentError as exc:
            self.counters.permanent += 1
            self._attempts.pop(key, None)
            LOG.warning("%s: %s", key, exc.operator_message)
            await self._report(key, exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - anything else is retried, never lost
            self._retry_later(key, force, exc)
        else:
            self._attempts.pop(key, None)

    def _retry_later(self, key: str, force: bool, exc: Exception) -> None:
        attempt = self._attempts.get(key, 0)
        self._attempts[key] = attempt + 1
        delay = self._backoff.delay(attempt, self._rng)
        if isinstance(exc, TemporaryError):
            LOG.info("%s: %s; retry in %.2fs", key, exc.operator_message, delay)
        else:
            LOG.exception("%s: unexpected error; retry in %.2fs", key, delay)
        self.counters.retries += 1
        self._timers[key] = asyncio.get_running_loop().call_later(
            delay, self._retry_now, key, force
        )

    def _retry_now(self, key: str, force: bool) -> None:
        self._timers.pop(key, None)
        self._dirty[key] = self._dirty.get(key, False) or force
        if key not in self._running:
            self._ready.put_nowait(key)
