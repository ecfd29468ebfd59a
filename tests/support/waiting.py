"""Waiting the way a client does: poll a condition until it holds or a generous deadline.

The one ``wait_until`` of the test suite (API, jobs, e2e and agent tests all use it), so a
busy machine gets the same patience everywhere and a timeout always says what was awaited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL = 0.05
DEFAULT_TIMEOUT = 30.0


def wait_until(
    condition: Callable[[], object], timeout: float = DEFAULT_TIMEOUT, what: str = ""
) -> None:
    """Poll ``condition`` until it is truthy; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(POLL)


def wait_for_value(produce: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll ``produce`` until it returns something other than None, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = produce()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(POLL)
