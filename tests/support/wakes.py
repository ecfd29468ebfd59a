"""Counting wakeups from another thread, and waiting for them."""

from __future__ import annotations

import threading


class WakeCounter:
    """A callable to hand out as ``on_wake``; counts calls and lets a test wait for more."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = threading.Condition()

    def __call__(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def wait_beyond(self, n: int, timeout: float = 10) -> bool:
        """True once more than ``n`` wakeups were counted; False after ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: self.count > n, timeout=timeout)
