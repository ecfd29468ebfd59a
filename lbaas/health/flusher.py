"""The thread that writes a health store's buffered liveness and counters every interval.

The interval bounds how late ``last_heartbeat_at`` and listener statistics reach the
database (and so what a crash may lose); the service derives it from ``stale_after`` so
that batching never makes a live amphora look stale to another health manager.
"""

from __future__ import annotations

import logging
import threading

from lbaas.health.store import HealthStore

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 0.25


def flush_interval(stale_after: float) -> float:
    """At most a quarter second, and a small share of the time that makes an amphora stale."""
    return min(DEFAULT_INTERVAL, stale_after / 8)


class Flusher:
    """Calls ``store.flush()`` every ``interval`` seconds until stopped, and once more then."""

    def __init__(self, store: HealthStore, interval: float = DEFAULT_INTERVAL) -> None:
        self._store = store
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="health-flusher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop, then flush what the last interval left (the receiver is stopped first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self._flush_once()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._flush_once()

    def _flush_once(self) -> None:
        try:
            self._store.flush()
        except Exception:  # the top of the flusher loop: log and try again next interval
            log.exception("writing buffered heartbeats failed")
