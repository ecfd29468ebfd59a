"""The embedded engine: leases in this process's memory, for ``lbaas serve`` and tests.

``lbaas serve`` (SQLite, one process) has nobody to coordinate with but its own threads,
so it needs no extra service: the leases live in a dict under a lock and expire by this
process's monotonic clock, which is then the one clock every party reads. It is the same
interface as the networked engines, so the loops that take leases are the same code
whichever engine runs them, and the lease state machine is tested against it with a fake
clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from lbaas.coordination.base import LiveLease, check_lease


class EmbeddedCoordinator:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._leases: dict[str, tuple[str, float]] = {}  # name -> (holder, expires)

    def renew(self, name: str, holder: str, ttl: float) -> bool:
        check_lease(name, holder, ttl)
        with self._lock:
            now = self._clock()
            current = self._leases.get(name)
            if current is not None and current[0] != holder and current[1] > now:
                return False
            self._leases[name] = (holder, now + ttl)
            return True

    def release(self, name: str, holder: str) -> None:
        with self._lock:
            current = self._leases.get(name)
            if current is not None and current[0] == holder:
                del self._leases[name]

    def live(self, prefix: str) -> list[LiveLease]:
        with self._lock:
            now = self._clock()
            return [
                LiveLease(name, holder, expires - now)
                for name, (holder, expires) in sorted(self._leases.items())
                if name.startswith(prefix) and expires > now
            ]

    def close(self) -> None:
        """Nothing to close: the leases go with the process."""
