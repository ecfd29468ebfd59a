"""The server-sent event stream of one dashboard page.

Every ``interval`` seconds the stream reads its caller's scope from the database (in a
worker thread: the reads block) and sends

- ``topology`` with the whole tree, when it differs from what it last sent (the first
  tick always sends it), and
- ``traffic`` with the listener counters and the server's clock, every tick, so the page
  draws rates over time even when nothing changes.

A stream ends by itself after ``lifetime`` seconds; the browser's ``EventSource``
reconnects (after the ``retry`` we announce), which re-checks the caller's identity and
roles and bounds how long an open stream can hold up a server shutdown.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool

from lbaas.dashboard.snapshot import Snapshot

RETRY_MS = 1000


def event(name: str, data: Any) -> str:
    """One SSE message; JSON never holds a raw newline, so ``data`` is one line."""
    return f"event: {name}\ndata: {json.dumps(data, default=str)}\n\n"


async def dashboard_events(
    read: Callable[[], Snapshot],
    disconnected: Callable[[], Awaitable[bool]],
    interval: float,
    lifetime: float,
) -> AsyncIterator[str]:
    yield f"retry: {RETRY_MS}\n\n"
    sent_topology: str | None = None
    ends = time.monotonic() + lifetime
    while time.monotonic() < ends and not await disconnected():
        snapshot = await run_in_threadpool(read)
        topology = snapshot.topology_json()
        if topology != sent_topology:
            sent_topology = topology
            # Already JSON: spliced in rather than encoded a second time.
            yield f"event: topology\ndata: {topology}\n\n"
        yield event("traffic", {"at": time.time(), "listeners": snapshot.counters})
        await anyio.sleep(interval)
