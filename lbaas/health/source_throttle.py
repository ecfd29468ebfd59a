"""Refusing, without a hash, datagrams from a source that keeps sending forged ones.

One receive thread can check the HMAC of some tens of thousands of datagrams a second; a
single flooding socket sends more, and once the socket buffer is full the kernel drops
datagrams without telling genuine from forged, so real heartbeats were lost. A genuine
sender (an agent sends all its heartbeats from one socket) never fails the HMAC, so what
is charged here is only failure: each source (address and port) may fail ``rate`` times
per second, with a burst of ``burst``; past that it is blocked for ``penalty`` seconds,
during which its datagrams are refused on one dictionary look-up. An agent is never
throttled however many amphorae it reports for, and a flood from one socket costs about
``rate`` hashes a second. A flood spoofing many source addresses is not stopped by this
(each source stays under its allowance); the tables are bounded so that it cannot grow
them either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

RATE = 50.0
"""Forged datagrams per second a source may send before it is blocked."""
BURST = 100.0
PENALTY = 1.0
"""Seconds a source is blocked for once it ran out of allowance."""
MAX_SOURCES = 8192
"""Sources tracked at once; beyond it the tables start afresh (a spoofed flood)."""


class SourceThrottle:
    """Used by the receive thread alone (no lock): ``blocked`` on every datagram,
    ``failed`` on each that did not pass the signature check."""

    def __init__(
        self,
        rate: float = RATE,
        burst: float = BURST,
        penalty: float = PENALTY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._penalty = penalty
        self._clock = clock
        self._allowance: dict[Hashable, tuple[float, float]] = {}
        """source → (tokens left, when they were counted)"""
        self._blocked_until: dict[Hashable, float] = {}
        self.blocks = 0
        """How many times a source was blocked so far (also: changes to the blocked set)."""

    def blocked(self, source: Hashable) -> bool:
        """Whether datagrams from ``source`` are refused unchecked just now."""
        until = self._blocked_until.get(source)
        if until is None:
            return False
        if until > self._clock():
            return True
        del self._blocked_until[source]
        return False

    def failed(self, source: Hashable) -> None:
        """``source`` sent a datagram that failed the signature check."""
        now = self._clock()
        tokens, since = self._allowance.get(source, (self._burst, now))
        tokens = min(self._burst, tokens + (now - since) * self._rate) - 1.0
        if tokens >= 0:
            if len(self._allowance) >= MAX_SOURCES and source not in self._allowance:
                self._allowance.clear()
            self._allowance[source] = (tokens, now)
            return
        self._allowance.pop(source, None)  # back to a full burst after the penalty
        if len(self._blocked_until) >= MAX_SOURCES:
            self._blocked_until = {s: t for s, t in self._blocked_until.items() if t > now}
            if len(self._blocked_until) >= MAX_SOURCES:
                self._blocked_until.clear()
        self._blocked_until[source] = now + self._penalty
        self.blocks += 1

    def blocked_sources(self) -> tuple[list[tuple[str, int]], float]:
        """The sources blocked now (newest last) and when the first block ends."""
        now = self._clock()
        self._blocked_until = {s: t for s, t in self._blocked_until.items() if t > now}
        ends = min(self._blocked_until.values(), default=float("inf"))
        sources = [s for s in self._blocked_until if isinstance(s, tuple) and len(s) >= 2]
        return [(str(s[0]), int(s[1])) for s in sources], ends
