"""Counting refused heartbeat datagrams and logging them at a bounded rate.

A UDP port anyone can reach will see garbage, scans and floods. One log line per refused
datagram once wrote 23.7 MB in ten seconds of flood and cost more than the refusal itself.
So refusals are only counted as they happen, and one summary line per ``interval`` says
how many there were of each kind and what the last one was; the first refusal after a
quiet interval is logged at once, so a single misconfigured agent is still seen promptly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable

log = logging.getLogger(__name__)


class RefusalLog:
    """Thread-safe: the receive loop and the processing loop both refuse datagrams."""

    def __init__(self, interval: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._last: tuple[str, object] = ("?", "")
        self._next_line = float("-inf")
        self.lines = 0
        """Summary lines written so far."""

    def note(self, kind: str, sender: str, reason: object, count: int = 1) -> None:
        """Count ``count`` refusals; ``reason`` is only formatted if this call writes a line."""
        now = self._clock()
        with self._lock:
            self._counts[kind] += count
            self._last = (sender, reason)
            if now < self._next_line:
                return
            counts, self._counts = self._counts, Counter()
            last = self._last
            self._next_line = now + self._interval
            self.lines += 1
        log.warning(
            "refused %d heartbeat datagram(s) (%s); the last from %s: %s; "
            "next summary in %.0fs at the earliest",
            sum(counts.values()),
            ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())),
            last[0],
            last[1],
            self._interval,
        )
