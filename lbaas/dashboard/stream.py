"""The server-sent event stream of one dashboard page.

Every ``interval`` seconds the stream asks its ``read`` (a ``TopologyTracker``'s tick, run
in a worker thread: the reads block) for the messages of that tick and sends them:
``topology`` (the whole tree) first and after a create or delete, ``changes`` (only the
objects that changed) otherwise, and ``traffic`` (listener counters and the server's
clock) every tick, so the page draws rates over time even when nothing changes.

A stream ends by itself after ``lifetime`` seconds; the browser's ``EventSource``
reconnects (after the ``retry`` we announce), which re-checks the caller's identity and
roles and bounds how long an open stream can hold up a server shutdown.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
from starlette.concurrency import run_in_threadpool

RETRY_MS = 1000


async def dashboard_events(
    read: Callable[[], list[str]],
    disconnected: Callable[[], Awaitable[bool]],
    interval: float,
    lifetime: float,
) -> AsyncIterator[str]:
    yield f"retry: {RETRY_MS}\n\n"
    ends = time.monotonic() + lifetime
    while time.monotonic() < ends and not await disconnected():
        for message in await run_in_threadpool(read):
            yield message
        await anyio.sleep(interval)
