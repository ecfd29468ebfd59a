"""``ChildWorker`` with a real child process: after a SIGKILL the dead child's pid is
handed to ``on_death`` and a new child is started, with no backoff for a single crash (a
policy that would back off shows its delay in the log line instead)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading

import pytest

from lbaas.child_worker import ChildWorker
from lbaas.restart_policy import RestartPolicy
from tests.support.waiting import wait_until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def current_pid(child: ChildWorker) -> int:
    process: subprocess.Popen[bytes] | None = child._process  # noqa: SLF001 - the test reads it
    assert process is not None
    return process.pid


def test_a_killed_child_is_reported_dead_and_replaced_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dead: list[int] = []
    reported = threading.Event()

    def on_death(pid: int) -> None:
        dead.append(pid)
        reported.set()

    child = ChildWorker(SLEEPER, on_death=on_death, stop_timeout=5)
    caplog.set_level(logging.ERROR, logger="lbaas.child_worker")
    child.start()
    try:
        first = current_pid(child)
        os.kill(first, signal.SIGKILL)
        assert reported.wait(30)
        wait_until(lambda: current_pid(child) != first, timeout=30)
        assert dead == [first]
        assert f"worker process {first} exited with -9; restarting in 0 s" in caplog.text
    finally:
        child.stop()
    assert dead[-1] != first  # stop() reports the last child too


def test_a_crash_loop_is_backed_off() -> None:
    exits: list[float] = []

    class Recording(RestartPolicy):
        def exited(self) -> float:
            delay = super().exited()
            exits.append(delay)
            return delay

    crashing = [sys.executable, "-c", "raise SystemExit(3)"]
    child = ChildWorker(crashing, policy=Recording(burst=2, first_delay=60.0, max_delay=60.0))
    child.start()
    try:
        # Two immediate restarts, then the third exit waits 60 s: no fourth start.
        wait_until(lambda: len(exits) == 3, timeout=60)
        assert exits == [0.0, 0.0, 60.0]
    finally:
        child.stop()
    assert len(exits) == 3
