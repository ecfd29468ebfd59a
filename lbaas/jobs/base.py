"""What wakes an idle worker from outside its process.

Two implementations, matched structurally: ``lbaas.jobs.wakeup.WakeupListener`` (a Unix
datagram socket, for the processes of one host) and ``lbaas.db.jobs.job_notify.
PostgresJobListener`` (PostgreSQL's LISTEN, for any host). Each calls the worker's
``notify`` when a job may be waiting; neither is needed for correctness, only for speed.
"""

from __future__ import annotations

from typing import Protocol


class WakeupSource(Protocol):
    def start(self) -> None:
        """Begin calling the worker's ``notify`` (on a thread of its own)."""

    def stop(self) -> None:
        """Stop, and release what it holds (socket file, connection)."""
