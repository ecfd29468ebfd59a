"""PostgreSQL LISTEN/NOTIFY for the job queue: a write on any host wakes every worker.

``job_queue.enqueue_converge`` sends ``NOTIFY`` inside the job's own transaction, and
PostgreSQL delivers it at the commit: never before the job is visible, never for a change
that was rolled back, and collapsed to one per transaction. Each worker process listens on
one dedicated connection. As with the wakeup sockets, a notification is only a hint: a
worker whose listening connection is down still finds every job by polling.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
from sqlalchemy.engine import make_url

from lbaas.background import BackgroundLoop

LOG = logging.getLogger(__name__)

CHANNEL = "lbaas_converge"
_RECONNECT_DELAY = 2.0


def libpq_dsn(sqlalchemy_url: str) -> str:
    """``postgresql+psycopg://…`` → the ``postgresql://…`` that psycopg itself takes."""
    url = make_url(sqlalchemy_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class PostgresJobListener(BackgroundLoop):
    """A thread that LISTENs on ``CHANNEL`` and calls ``on_wake`` per notification."""

    def __init__(self, sqlalchemy_url: str, on_wake: Callable[[], None]) -> None:
        self._dsn = libpq_dsn(sqlalchemy_url)
        self._on_wake = on_wake
        super().__init__("job-listener", stop_timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except psycopg.Error as exc:
                LOG.warning("job notifications unavailable (%s); polling meanwhile", exc)
                self._stop.wait(_RECONNECT_DELAY)

    def _listen(self) -> None:
        with psycopg.connect(self._dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            # Jobs committed while nobody listened are waiting: look now.
            self._on_wake()
            while not self._stop.is_set():
                # Returns after the timeout, so the stop flag is seen.
                for _notification in conn.notifies(timeout=0.5):
                    self._on_wake()
