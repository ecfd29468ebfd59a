"""Status and statistics pushed to Octavia over its driver agent's sockets.

``Sink`` is the part of octavia-lib's ``DriverLibrary`` used here (tests pass a recording
one). ``Reporter`` remembers what Octavia was last told of each object and sends what
changed; an object lbaas no longer has is sent as DELETED. A push that fails (the driver
agent restarting) is forgotten, so the next round sends it again.

Only settled statuses are sent, never lbaas's PENDING_*: Octavia sets its own PENDING_*
when it hands a change to the driver, and two reporters (the watcher in the API process,
the provider agent's rounds) push snapshots read at different times, so a PENDING_* read
before lbaas converged could land after the ACTIVE read later, and put Octavia's load
balancer back to PENDING_* (a user's next change then meets Octavia's 409 "immutable"
until the next round). An object lbaas holds PENDING_* is left out and forgotten, so its
settled status is sent as a change once lbaas has one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from lbaas_octavia_provider.settings import Settings
from lbaas_octavia_provider.status import PENDING, Key, Snapshot, Status, status_message

LOG = logging.getLogger(__name__)
STATS_FIELDS = (
    "active_connections",
    "bytes_in",
    "bytes_out",
    "request_errors",
    "total_connections",
)


class Sink(Protocol):
    def update_loadbalancer_status(self, status: dict[str, Any]) -> None: ...

    def update_listener_statistics(self, statistics: dict[str, Any]) -> None: ...

    def get_loadbalancer(self, loadbalancer_id: str) -> Any: ...


def driver_library(settings: Settings) -> Sink:
    """octavia-lib's client of the driver agent's sockets (it waits for them to appear)."""
    from octavia_lib.api.drivers import driver_lib

    library: Sink = driver_lib.DriverLibrary(
        status_socket=settings.status_socket,
        stats_socket=settings.stats_socket,
        get_socket=settings.get_socket,
    )
    return library


class LazySink:
    """A Sink made on first use: the driver agent's sockets may appear after Octavia's
    API process loads the driver."""

    def __init__(self, make: Callable[[], Sink]) -> None:
        self._make = make
        self._sink: Sink | None = None
        self._lock = threading.Lock()

    def _get(self) -> Sink:
        with self._lock:
            if self._sink is None:
                self._sink = self._make()
            return self._sink

    def update_loadbalancer_status(self, status: dict[str, Any]) -> None:
        self._get().update_loadbalancer_status(status)

    def update_listener_statistics(self, statistics: dict[str, Any]) -> None:
        self._get().update_listener_statistics(statistics)

    def get_loadbalancer(self, loadbalancer_id: str) -> Any:
        return self._get().get_loadbalancer(loadbalancer_id)


class Reporter:
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._told: dict[str, dict[Key, Status]] = {}  # per load balancer
        self._stats: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def push(self, snap: Snapshot, force: bool = False, deleted: Iterable[Key] = ()) -> bool:
        """Tell Octavia what changed in ``snap`` since the last push (everything when
        ``force``), and ``deleted`` objects as DELETED. True when something was sent."""
        with self._lock:
            told = self._told.get(snap.loadbalancer_id, {})
            now = snap.statuses if snap.exists else {}
            settled = {k: v for k, v in now.items() if not v[0].startswith(PENDING)}
            changed = {k: v for k, v in settled.items() if force or told.get(k) != v}
            gone = [k for k in told if k not in now]
            gone += [k for k in deleted if k not in now and k not in gone]
            if not snap.exists and ("loadbalancers", snap.loadbalancer_id) not in gone:
                gone.append(("loadbalancers", snap.loadbalancer_id))
            if not changed and not gone:
                if snap.exists:  # a pending object is forgotten: its outcome is news
                    self._told[snap.loadbalancer_id] = settled
                return False
            self.sink.update_loadbalancer_status(status_message(changed, gone))
            if snap.exists:
                self._told[snap.loadbalancer_id] = settled
            else:
                self._told.pop(snap.loadbalancer_id, None)
            return True

    def known(self) -> list[str]:
        with self._lock:
            return list(self._told)

    def push_stats(self, listener_id: str, stats: dict[str, Any]) -> bool:
        """Send one listener's counters (lbaas's totals: Octavia replaces its own)."""
        values = tuple(int(stats.get(name) or 0) for name in STATS_FIELDS)
        if self._stats.get(listener_id) == values:
            return False
        record = {"id": listener_id, **dict(zip(STATS_FIELDS, values, strict=True))}
        self.sink.update_listener_statistics({"listeners": [record]})
        self._stats[listener_id] = values
        return True
