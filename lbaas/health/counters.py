"""Listener statistics that survive HAProxy reloads, agent restarts and failovers.

HAProxy's counters are cumulative only for the life of one process: a seamless reload
starts them again at zero, so does an agent restart, and a failed-over amphora is a new
machine with counters of its own. Tenants expect ``bytes_in`` to only ever grow.

So per (amphora, listener) we keep a ``CounterRecord``: the agent ``epoch`` the numbers
belong to, ``last`` (the newest report of the running process) and ``base`` (everything
earlier processes counted). A report from a new epoch, or one in which any cumulative
counter went down (a reload inside the same agent life), moves ``last`` into ``base``
before taking the report as the new ``last``. ``active_connections`` is a gauge, not a
count, so it is never accumulated: it is whatever the newest report says; so are the VIP
probe gauges (``vip_probes``, ``vip_answered``).

A report from an older epoch than the record's arrives after its successor took over; it
is ignored (at most one interval of that old process's traffic goes uncounted). Reordering
inside one epoch cannot be told apart from a reload by the numbers alone, so it is stopped
before it gets here, by the envelope's replay guard refusing lower sequence numbers.

Everything here is pure; the store applies ``fold_report`` inside its own transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from lbaas.model.graph import ListenerId
from lbaas.model.health import ListenerCounters

ZERO = ListenerCounters()


@dataclass(frozen=True)
class CounterRecord:
    """What is stored per (amphora, listener) so that no count is ever lost."""

    epoch: int
    base: ListenerCounters
    last: ListenerCounters


def fold(stored: CounterRecord | None, epoch: int, reported: ListenerCounters) -> CounterRecord:
    """The record after one more report from the amphora's agent of ``epoch``."""
    if stored is None:
        return CounterRecord(epoch=epoch, base=ZERO, last=reported)
    if epoch < stored.epoch:
        return stored
    if epoch > stored.epoch or reported.went_down_from(stored.last):
        return CounterRecord(epoch=epoch, base=_carry(stored.base, stored.last), last=reported)
    return replace(stored, last=reported)


def fold_report(
    current: Mapping[ListenerId, CounterRecord],
    epoch: int,
    reported: Mapping[ListenerId, ListenerCounters],
) -> dict[ListenerId, CounterRecord]:
    """The new records of every listener in one amphora's report (others are untouched)."""
    return {lid: fold(current.get(lid), epoch, counters) for lid, counters in reported.items()}


def retire(stored: CounterRecord) -> CounterRecord:
    """The record once its amphora is gone for good: counts kept, no live connections.

    Call it when an amphora is deleted (after a failover, say) so that its old
    ``active_connections`` stop adding to the listener's while its bytes still count.
    """
    return replace(stored, base=_carry(stored.base, stored.last), last=ZERO)


def total(stored: CounterRecord) -> ListenerCounters:
    """Everything one amphora ever counted for one listener, plus its current gauges."""
    last = stored.last
    return replace(
        stored.base + last,
        active_connections=last.active_connections,
        vip_probes=last.vip_probes,
        vip_answered=last.vip_answered,
    )


def sum_counters(counters: Iterable[ListenerCounters]) -> ListenerCounters:
    """Field-wise sum: a listener's stats over its amphorae, an LB's over its listeners."""
    return sum(counters, ZERO)


def listener_stats(records: Iterable[CounterRecord]) -> ListenerCounters:
    """A listener's statistics from the records of every amphora that ever served it."""
    return sum_counters(total(r) for r in records)


def _carry(base: ListenerCounters, last: ListenerCounters) -> ListenerCounters:
    """``base`` with a finished process's counts added; the gauge is not carried."""
    return replace(base + last, active_connections=0, vip_probes=0, vip_answered=0)
