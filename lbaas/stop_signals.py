"""How a long-running ``lbaas`` process takes SIGTERM and SIGINT: as a request to stop in
order, never as Python's default death, so its clean-up runs.

Two shapes: ``StopSignals`` for a process that waits for its stop (a worker, a health
manager, an agent; as serve's child, it also stops when serve is gone), and
``hold_stop_signals`` for a process whose server (uvicorn) takes the signals while it runs.
"""

from __future__ import annotations

import logging
import os
import signal
import threading

LOG = logging.getLogger("lbaas")


class StopSignals:
    """SIGTERM/SIGINT handlers installed before a process starts its threads.

    Installed first so that a signal arriving while the process is still starting (a
    worker may already be converging) is a clean stop, never Python's default exit.
    With ``parent_pid`` (a child of serve), SIGINT is ignored: Ctrl-C reaches the whole
    process group, and serve, which got it too, stops its child in order.
    """

    def __init__(self, parent_pid: int | None = None) -> None:
        self._parent_pid = parent_pid
        self._stop = threading.Event()
        signal.signal(signal.SIGTERM, self._handler)
        if parent_pid is None:
            signal.signal(signal.SIGINT, self._handler)
        else:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def _handler(self, signum: int, _frame: object) -> None:
        LOG.info("signal %d received, stopping", signum)
        self._stop.set()

    def wait(self) -> None:
        """Until a stop signal; for a child of serve, also until that parent is gone
        (a SIGKILLed serve is seen as a changed parent)."""
        if self._parent_pid is None:
            self._stop.wait()
            return
        while not self._stop.wait(0.5):
            if os.getppid() != self._parent_pid:
                LOG.warning("parent process %d is gone; stopping", self._parent_pid)
                return


def hold_stop_signals() -> threading.Event:
    """Record SIGTERM/SIGINT instead of dying of them, so cleanup runs.

    uvicorn takes both signals while it serves and, once stopped, raises them again
    against the handlers it found: with Python's defaults, SIGTERM then killed serve
    before its ``finally`` stopped the worker child. These handlers take the re-raised
    signal (and any arriving outside uvicorn's run) without ending the process.
    """
    stopping = threading.Event()

    def _handler(signum: int, _frame: object) -> None:
        LOG.info("signal %d received, stopping", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    return stopping
