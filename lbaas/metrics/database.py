"""What the database holds, read at scrape time: the control plane's state (this
collector) and every load balancer, listener, pool and member (``read_objects``, written
out by ``lbaas.metrics.object_text``; ``/metrics`` serves the same text through
``lbaas.metrics.object_cache``, which redoes only what moved since the last scrape).

Why at scrape time rather than live instruments: the objects' figures are written by other
processes (the API writes statuses, workers converge, health managers fold heartbeats), so
only the database knows them all; and a collector that emits the objects that exist now
cannot leak label sets of deleted objects, which live ``Gauge(...).labels(id)`` children
would keep until the process restarts. The label cardinality is therefore bounded by the
number of objects in the database: one status series per object, six traffic series per
listener and per load balancer (and the listener's VIP probe), seven per pool and member
with a counter record, nothing per request. Any API process answers alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lbaas.db.control_plane_counts import ControlPlaneCounts, control_plane_counts
from lbaas.db.engine import Database
from lbaas.db.loadbalancers.object_statuses import ObjectFigures, object_figures
from lbaas.db.schema_check import stated_revision


class ControlPlaneCollector(Collector):
    """Load balancers and amphorae by status, the converge queue, what is heard from."""

    def __init__(self, database: Database, stale_after: float) -> None:
        self._database = database
        self._stale_after = stale_after

    def read(self) -> ControlPlaneCounts:
        now = time.time()
        with self._database.read_connection() as conn:
            return control_plane_counts(conn, now, heard_since=now - self._stale_after)

    def collect(self) -> Iterator[Metric]:
        state = self.read()
        yield _by_label(
            "lbaas_loadbalancers",
            "Load balancers by provisioning status (DELETED ones until housekeeping).",
            "provisioning_status",
            state.loadbalancers,
        )
        yield _by_label("lbaas_amphorae", "Amphorae by status.", "status", state.amphorae)
        yield _by_label(
            "lbaas_converge_jobs",
            "Converge jobs with work to do: queued (runnable, unclaimed), running "
            "(leased), backing_off (waiting to retry).",
            "state",
            state.jobs,
        )
        yield GaugeMetricFamily(
            "lbaas_converge_oldest_queued_seconds",
            "How long the oldest runnable job has waited for a worker (0 when none waits).",
            value=state.oldest_queued_seconds,
        )
        yield GaugeMetricFamily(
            "lbaas_amphorae_heard",
            "Amphorae whose last heartbeat is newer than health.stale_after.",
            value=state.amphorae_heard,
        )
        # Until the hosts registry exists, an agent host is up when an amphora it runs
        # was heard from; the registry's own up/down count belongs next to this one.
        yield GaugeMetricFamily(
            "lbaas_agent_hosts_up",
            "Agent hosts with at least one amphora heard from within health.stale_after.",
            value=state.hosts_heard,
        )
        with self._database.read_connection() as conn:
            revision = stated_revision(conn)
        schema = GaugeMetricFamily(
            "lbaas_schema_revision_info",
            "The Alembic revision the database states (1 on it): during a rolling upgrade, "
            "the expand step's revision until `lbaas db upgrade --contract`.",
            labels=["revision"],
        )
        schema.add_metric([revision or "none"], 1)
        yield schema


def _by_label(name: str, help_text: str, label: str, counts: dict[str, int]) -> Metric:
    family = GaugeMetricFamily(name, help_text, labels=[label])
    for value, number in sorted(counts.items()):
        family.add_metric([value], float(number))
    return family


def read_objects(database: Database) -> ObjectFigures:
    with database.read_connection() as conn:
        return object_figures(conn)
