"""A clock a test sets by hand, for code that takes its time as a ``Callable[[], float]``."""

from __future__ import annotations


class FakeClock:
    """Returns ``now``; tests move it with ``advance`` (or by assigning ``now``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
