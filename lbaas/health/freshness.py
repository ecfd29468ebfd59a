"""Which heartbeats are fresh: newer than the newest one any health manager accepted.

An agent stamps every datagram with its start time (``epoch``, nanoseconds, so a restart
moves it forward) and a ``sequence`` that grows with each datagram of that epoch. The
receiver's ``ReplayGuard`` refuses, in memory, what this process already saw; that cannot
stop a captured datagram replayed to another health manager or after a restart. So the
newest stamp accepted per amphora is stored with the amphora, and the SQL store checks
against it in the transactions that write what a heartbeat changed:

* liveness and counters (the flush): only a stamp strictly newer than the stored one
  counts, and the stored one moves forward; an older counter report is dropped, which
  loses nothing, because counters are cumulative and the newer report carries them;
* statuses (written at once): a stamp older than the stored one is refused; the same
  stamp is allowed, since the flush of that very heartbeat may have stored it already.

A heartbeat without a stamp (one that did not come off the wire: a provider's own
status answer, a test) is not checked.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True, slots=True)
class HeartbeatStamp:
    """(epoch, sequence) of one heartbeat; later compares greater."""

    epoch: int
    sequence: int

    @classmethod
    def stored(cls, raw: tuple[int, int] | None) -> HeartbeatStamp | None:
        return None if raw is None else cls(*raw)

    def as_row(self) -> tuple[int, int]:
        return self.epoch, self.sequence


def newer(stamp: HeartbeatStamp | None, accepted: HeartbeatStamp | None) -> bool:
    """Whether a heartbeat stamped ``stamp`` may count for liveness and counters."""
    return stamp is None or accepted is None or stamp > accepted


def not_older(stamp: HeartbeatStamp | None, accepted: HeartbeatStamp | None) -> bool:
    """Whether a heartbeat stamped ``stamp`` may write statuses."""
    return stamp is None or accepted is None or stamp >= accepted
