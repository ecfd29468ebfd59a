"""The per-load-balancer failover circuit breaker.

The fleet-wide storm guard (``lbaas.health.stale``) stops failovers when much of the data
plane is silent at once; it does not see one load balancer failed over again and again
(during repeated agent kills one had six amphorae retired in a row). So each load
balancer may be failed over automatically at most ``limit`` times per ``window``
seconds, counted from the amphorae it retired (in the database, so every health manager
counts the same). Past that its breaker is open: the silent amphora is logged once and
left alone until older retirements leave the window. Operator failovers are not limited.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.health.fleet import utc_datetime

log = logging.getLogger(__name__)


class RetirementHistory(Protocol):
    def retired_since(self, loadbalancer_id: str, since: float) -> int:
        """Amphorae of the load balancer retired at or after time ``since``."""
        ...


class SqlRetirementHistory:
    def __init__(self, database: Database) -> None:
        self._db = database

    def retired_since(self, loadbalancer_id: str, since: float) -> int:
        with self._db.read() as session:
            return host_repo.recent_retirements(session, loadbalancer_id, utc_datetime(since))


class LoadBalancerBreaker:
    """Whether one more automatic failover of a load balancer is allowed now."""

    def __init__(
        self,
        history: RetirementHistory,
        *,
        limit: int,
        window: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._history = history
        self._limit = limit
        self._window = window
        self._clock = clock
        self._open: set[str] = set()

    def allows(self, loadbalancer_id: str) -> bool:
        if self._limit <= 0:
            return True
        count = self._history.retired_since(loadbalancer_id, self._clock() - self._window)
        if count < self._limit:
            if loadbalancer_id in self._open:
                self._open.discard(loadbalancer_id)
                log.info("failover circuit breaker of load balancer %s closed", loadbalancer_id)
            return True
        if loadbalancer_id not in self._open:
            self._open.add(loadbalancer_id)
            log.error(
                "failover circuit breaker of load balancer %s open: %d amphorae retired in "
                "%.0fs; automatic failover of it stopped",
                loadbalancer_id,
                count,
                self._window,
            )
        return False
