"""A daemon thread that runs a loop until it is told to stop: what the background loops of
the worker, the agent and the job queue share (the supervisor, the dead-sibling watch, the
metadata sync, the PostgreSQL job listener).

A subclass writes ``_run`` and ends it soon after ``_stop`` is set (waiting on it, not
sleeping). Daemon, so a process that exits without stopping one is not held up by it.
"""

from __future__ import annotations

import abc
import threading


class BackgroundLoop(abc.ABC):
    def __init__(self, name: str, stop_timeout: float) -> None:
        """``name``: the thread's (logs, ``py-spy``); ``stop_timeout``: how long ``stop``
        waits for the loop to end by default."""
        self._stop = threading.Event()
        self._stop_timeout = stop_timeout
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Ask the loop to end and wait for it (``stop_timeout`` unless ``timeout``)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self._stop_timeout if timeout is None else timeout)

    @abc.abstractmethod
    def _run(self) -> None:
        """The loop; it returns once ``self._stop`` is set."""
