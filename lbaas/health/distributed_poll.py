"""Operating statuses of distributed load balancers, from polling their nodes.

Amphorae push heartbeats; the nodes of the ``distributed`` provider are asked instead
(``DistributedProvider.report``: every node's view, combined by majority), every
``interval`` seconds, for every ACTIVE distributed load balancer. The report is rolled up
and written through the same ``HealthStore.apply_operating_statuses`` as a heartbeat's,
which refuses to write during a converge (the converge settles statuses itself) and skips
what is already stored. The poll runs in the health manager, in a thread of its own, and
only in the health manager that leads ``distributed-poll`` when several run
(``lbaas.coordination.leader``; ``run``'s ``leads``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from lbaas.health.rollup import roll_up
from lbaas.health.store import HealthStore
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.model.health import HealthReport

log = logging.getLogger(__name__)

Reporter = Callable[[LoadBalancer], HealthReport | None]


class DistributedStatusPoller:
    def __init__(
        self,
        store: HealthStore,
        loadbalancers: Callable[[], list[str]],
        start_round: Callable[[], Reporter],
    ) -> None:
        """``start_round`` is called once per round, after the load balancers are listed,
        and gives the round's reporter: it reads every node once (``node_views``), so a
        round costs one call per node rather than one per node and load balancer."""
        self._store = store
        self._loadbalancers = loadbalancers
        self._start_round = start_round
        self.written = 0

    def poll_once(self) -> int:
        """Ask about every distributed load balancer once; how many had statuses written."""
        written = 0
        ids = [LoadBalancerId(lb_id) for lb_id in self._loadbalancers()]
        # No heartbeat revalidates these graphs: without this, one read before a member was
        # added would be used until a status write (up to status_refresh, 30 s) refreshed it.
        self._store.refresh_graphs(ids)
        if not ids:
            return 0
        report = self._start_round()
        for lb_id in ids:
            graph = self._store.load_graph(lb_id)
            if graph is None:
                continue
            health = report(graph)
            if health is None:  # no node answered: keep what is stored
                continue
            if self._store.apply_operating_statuses(graph.id, roll_up(graph, health)):
                written += 1
        self.written += written
        return written

    def run(
        self, stop: threading.Event, interval: float, leads: Callable[[], bool] = lambda: True
    ) -> None:
        """Poll every ``interval`` s until ``stop``, each round only while ``leads()``."""
        while not stop.wait(interval):
            if not leads():
                continue
            # Top of the poll loop: one failed round must not end the polling.
            try:
                self.poll_once()
            except Exception:  # noqa: BLE001 - logged; the next round tries again
                log.exception("distributed status poll failed")
