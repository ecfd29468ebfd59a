"""The work queue: per-key order, concurrency across keys, coalescing, backoff (pure
asyncio, a recording handler passed in)."""

from __future__ import annotations

import asyncio
import random

import pytest

from lbaas.errors import PermanentError, TemporaryError
from lbaas.integrations.kubernetes.pipeline import Backoff, WorkQueue


class Recorder:
    def __init__(self, hold: float = 0.0, fail: dict[str, list[Exception]] | None = None) -> None:
        self.hold = hold
        self.fail = fail or {}
        self.active: set[str] = set()
        self.overlap = False
        self.max_parallel = 0
        self.calls: list[tuple[str, bool]] = []
        self.reported: list[str] = []

    async def handle(self, key: str, force: bool) -> None:
        if key in self.active:
            self.overlap = True
        self.active.add(key)
        self.max_parallel = max(self.max_parallel, len(self.active))
        self.calls.append((key, force))
        try:
            await asyncio.sleep(self.hold)
            if self.fail.get(key):
                raise self.fail[key].pop(0)
        finally:
            self.active.discard(key)

    async def report(self, key: str, error: PermanentError) -> None:
        self.reported.append(f"{key}: {error.user_message}")


async def _drain(queue: WorkQueue) -> None:
    runner = asyncio.create_task(queue.run())
    try:
        await asyncio.wait_for(queue.wait_idle(), 10)
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


@pytest.mark.asyncio
async def test_a_burst_for_one_key_coalesces_and_keys_run_concurrently() -> None:
    recorder = Recorder(hold=0.05)
    queue = WorkQueue(recorder.handle, recorder.report, workers=4)
    runner = asyncio.create_task(queue.run())
    for key in ("a", "b", "c"):
        queue.enqueue(key)
    await asyncio.sleep(0.01)
    for _ in range(50):
        queue.enqueue("a")
    await asyncio.wait_for(queue.wait_idle(), 10)
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
    assert [k for k, _ in recorder.calls].count("a") == 2  # the run under way, then one more
    assert not recorder.overlap
    assert recorder.max_parallel == 3


@pytest.mark.asyncio
async def test_force_survives_coalescing() -> None:
    recorder = Recorder()
    queue = WorkQueue(recorder.handle, recorder.report, workers=1)
    queue.enqueue("a")
    queue.enqueue("a", force=True)
    queue.enqueue("a")
    await _drain(queue)
    assert recorder.calls == [("a", True)]


@pytest.mark.asyncio
async def test_temporary_errors_retry_with_backoff_and_permanent_ones_are_reported() -> None:
    recorder = Recorder(
        fail={
            "a": [TemporaryError("409"), TemporaryError("409"), RuntimeError("boom")],
            "b": [PermanentError("bad port")],
        }
    )
    queue = WorkQueue(
        recorder.handle,
        recorder.report,
        workers=2,
        backoff=Backoff(base=0.01, cap=0.05),
        rng=random.Random(1),
    )
    queue.enqueue("a")
    queue.enqueue("b")
    await _drain(queue)
    assert [k for k, _ in recorder.calls].count("a") == 4
    assert [k for k, _ in recorder.calls].count("b") == 1
    assert recorder.reported == ["b: bad port"]
    assert queue.counters.retries == 3


def test_backoff_is_jittered_exponential_and_capped() -> None:
    backoff = Backoff(base=0.5, cap=8.0)
    rng = random.Random(7)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (3, 4.0), (4, 8.0), (10, 8.0), (99, 8.0)]:
        draws = {backoff.delay(attempt, rng) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in draws)
        assert len(draws) > 1  # jittered, not lock step


@pytest.mark.asyncio
async def test_a_delayed_enqueue_gathers_what_arrives_meanwhile() -> None:
    recorder = Recorder()
    queue = WorkQueue(recorder.handle, recorder.report, workers=2)
    runner = asyncio.create_task(queue.run())
    queue.enqueue("a", delay=0.1)
    await asyncio.sleep(0.02)
    assert recorder.calls == []  # not before the delay
    for _ in range(20):
        queue.enqueue("a", delay=0.1)
    await asyncio.wait_for(queue.wait_idle(), 10)
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
    assert recorder.calls == [("a", False)]
