"""How long a supervisor waits before starting again a child process that exited.

A single crash (a SIGKILL, the kernel's OOM killer, a bug hit once) is restarted at once:
every second of delay is a second the child's work waits, and after a worker's crash
that is a second longer in PENDING for every load balancer it held. The old policy
doubled the delay from 1 s at each exit less than 30 s after the last, so five kills in
two minutes (the fault campaign of issue 31) kept load balancers PENDING for 9–23 s.

Only a crash loop is backed off: more than ``burst`` exits within ``window`` seconds
(a child that dies at start-up, from a bad configuration or an unreachable database,
would otherwise spin a core). Each exit beyond the burst doubles the delay, from
``first_delay`` up to ``max_delay``; exits older than the window are forgotten, so a
child that ran well for a while is restarted at once again. systemd's
``StartLimitBurst``/``StartLimitIntervalSec`` count the same way.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class RestartPolicy:
    """Immediate restarts up to ``burst`` exits per ``window`` seconds, then backoff."""

    def __init__(
        self,
        *,
        burst: int = 3,
        window: float = 60.0,
        first_delay: float = 1.0,
        max_delay: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if burst < 1 or window <= 0 or first_delay <= 0 or max_delay < first_delay:
            raise ValueError("a restart policy needs burst >= 1 and positive delays")
        self._burst = burst
        self._window = window
        self._first = first_delay
        self._max = max_delay
        self._clock = clock
        self._exits: deque[float] = deque()

    def exited(self) -> float:
        """Record that the child exited now; seconds to wait before starting it again."""
        now = self._clock()
        self._exits.append(now)
        while self._exits and self._exits[0] <= now - self._window:
            self._exits.popleft()
        beyond = len(self._exits) - self._burst
        if beyond <= 0:
            return 0.0
        # Capped before the power so a long loop cannot overflow the float.
        return min(self._max, self._first * 2.0 ** min(beyond - 1, 32))
