"""Collectors that read the database at scrape time: the control plane's state and every
load balancer, listener, pool and member.

Why at scrape time rather than live instruments: the objects' figures are written by other
processes (the API writes statuses, workers converge, health managers fold heartbeats), so
only the database knows them all; and a collector that emits the objects that exist now
cannot leak label sets of deleted objects, which live ``Gauge(...).labels(id)`` children
would keep until the process restarts. The label cardinality is therefore bounded by the
number of objects in the database: one status series per object, five counter series per
listener and per load balancer, nothing per request. Any API process answers alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lbaas.db.engine import Database
from lbaas.db.metrics_queries import ControlPlaneCounts, control_plane_counts
from lbaas.db.object_metrics import ObjectFigures, ObjectStatus, object_figures

STATUS_LABELS = ("provisioning_status", "operating_status")

# (metric suffix, stats_repo counter, help, kind): a listener's and a load balancer's.
TRAFFIC = (
    ("bytes_in", "bytes_in", "Bytes received from clients.", "counter"),
    ("bytes_out", "bytes_out", "Bytes sent to clients.", "counter"),
    ("connections", "total_connections", "Connections accepted.", "counter"),
    ("active_connections", "active_connections", "Connections open now.", "gauge"),
    ("request_errors", "request_errors", "Requests HAProxy refused as errors.", "counter"),
)


def _family(
    name: str, help_text: str, labels: list[str], kind: str
) -> CounterMetricFamily | GaugeMetricFamily:
    if kind == "counter":
        return CounterMetricFamily(name, help_text, labels=labels)
    return GaugeMetricFamily(name, help_text, labels=labels)


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


def _by_label(name: str, help_text: str, label: str, counts: dict[str, int]) -> Metric:
    family = GaugeMetricFamily(name, help_text, labels=[label])
    for value, number in sorted(counts.items()):
        family.add_metric([value], float(number))
    return family


class ObjectCollector(Collector):
    """One status series per object and the traffic of every listener and load balancer."""

    def __init__(self, read: Callable[[], ObjectFigures]) -> None:
        self._read = read

    @classmethod
    def of(cls, database: Database) -> ObjectCollector:
        def read() -> ObjectFigures:
            with database.read_connection() as conn:
                return object_figures(conn)

        return cls(read)

    def collect(self) -> Iterator[Metric]:
        figures = self._read()
        yield _statuses("loadbalancer", [], figures.loadbalancers)
        yield _statuses("listener", ["loadbalancer_id"], figures.listeners)
        yield _statuses("pool", ["loadbalancer_id"], figures.pools)
        yield _statuses("member", ["pool_id"], figures.members)
        yield from _traffic(figures)


def _statuses(kind: str, parent: list[str], objects: list[ObjectStatus]) -> Metric:
    family = GaugeMetricFamily(
        f"lbaas_{kind}_status",
        f"Always 1, one series per {kind}: its statuses are the labels.",
        labels=[f"{kind}_id", *parent, "project_id", *STATUS_LABELS],
    )
    for o in objects:
        ids = [o.id, o.parent_id] if parent else [o.id]
        family.add_metric([*ids, o.project_id, o.provisioning_status, o.operating_status], 1.0)
    return family


def _traffic(figures: ObjectFigures) -> Iterator[Metric]:
    """Listener counters as the health manager folded them; a load balancer's are the sum
    of its listeners'."""
    per_lb: dict[str, dict[str, int]] = {}
    owners = {lb.id: lb.project_id for lb in figures.loadbalancers}
    for name, field, help_text, kind in TRAFFIC:
        listeners = _family(
            f"lbaas_listener_{name}",
            help_text,
            ["listener_id", "loadbalancer_id", "project_id"],
            kind,
        )
        for listener in figures.listeners:
            value = figures.listener_counters.get(listener.id, {}).get(field, 0)
            listeners.add_metric([listener.id, listener.parent_id, listener.project_id], value)
            into = per_lb.setdefault(listener.parent_id, {})
            into[field] = into.get(field, 0) + value
        yield listeners
        lbs = _family(
            f"lbaas_loadbalancer_{name}", help_text, ["loadbalancer_id", "project_id"], kind
        )
        for lb_id, project_id in owners.items():
            lbs.add_metric([lb_id, project_id], per_lb.get(lb_id, {}).get(field, 0))
        yield lbs
