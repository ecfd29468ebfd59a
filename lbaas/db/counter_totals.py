"""A counter record's contribution to its object's figures, kept as integer columns.

A ``listener_stats`` record holds the health manager's folding state as JSON (``base``:
what earlier HAProxy processes of the amphora counted, ``last``: the running process's
newest report; see ``lbaas.health.counters``). Every reader that shows figures wants the
same thing from it: ``base + last`` for a cumulative counter, ``last`` alone for a gauge.
That sum is stored next to the JSON, one integer column per counter, written with the
record; so ``/metrics``, the dashboard and ``/stats`` add integers in SQL instead of
reading and parsing two JSON documents per record (at 1000 load balancers and 10,000
members that parsing was most of a scrape).
"""

from __future__ import annotations

from collections.abc import Mapping

#: The integer columns, named after the counters (``ListenerCounters``' fields).
TOTAL_COLUMNS = (
    "bytes_in",
    "bytes_out",
    "active_connections",
    "total_connections",
    "request_errors",
    "requests",
    "vip_probes",
    "vip_answered",
    "check_failures",
)
#: Octavia's five statistics, the fields of the API's ``stats`` bodies (``/stats`` of a
#: listener or load balancer, an amphora's ``stats``): the first five columns.
STATS_COUNTERS = TOTAL_COLUMNS[:5]
#: Only the newest report counts: connections open now, the VIP probe's latest outcome.
GAUGES = frozenset(("active_connections", "vip_probes", "vip_answered"))


def record_totals(base: Mapping[str, int], last: Mapping[str, int]) -> dict[str, int]:
    """The values of the integer columns for a record's ``base`` and ``last``."""
    return {
        name: int(last.get(name, 0)) + (0 if name in GAUGES else int(base.get(name, 0)))
        for name in TOTAL_COLUMNS
    }
