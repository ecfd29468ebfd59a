"""Per-node gauges of the L4 tier, built at scrape time from the tier's status.

The status is what ``lbaas lab tier`` prints (``lbaas.lab.tier_status``): per node its
lease (age, held), the VIPs its BIRD announces (or ``"unreachable"``) and the router's BGP
session with it; a running watcher adds ``down`` (its verdict after the double check). So
the figures are read from what runs, like the command's, and a scrape costs a few BIRD
control-socket queries. A figure that cannot be known (no lease row, a BIRD that does not
answer) has no sample, rather than a zero that would read as a fact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

TierStatus = Callable[[], Mapping[str, Any]]


def _node_up(row: Mapping[str, Any]) -> bool:
    """Up: not marked down by the watcher, or, with no watcher's verdict, a lease held."""
    if "down" in row:
        return not row["down"]
    lease = row.get("lease")
    return bool(lease and lease.get("held"))


class TierCollector(Collector):
    """``lbaas_tier_node_*{node}`` and ``lbaas_tier_lease_store_up`` from a status."""

    def __init__(self, status: TierStatus) -> None:
        self._status = status

    def collect(self) -> Iterator[Metric]:
        status = self._status()
        nodes: Mapping[str, Mapping[str, Any]] = status.get("nodes", {})
        up = GaugeMetricFamily(
            "lbaas_tier_node_up", "1 while a tier node is not marked down.", labels=["node"]
        )
        age = GaugeMetricFamily(
            "lbaas_tier_node_lease_age_seconds",
            "Seconds since a tier node last renewed its lease.",
            labels=["node"],
        )
        announced = GaugeMetricFamily(
            "lbaas_tier_node_announced_vips",
            "VIPs a tier node's BGP speaker announces.",
            labels=["node"],
        )
        bgp = GaugeMetricFamily(
            "lbaas_tier_node_bgp_established",
            "1 while the router's BGP session with a tier node is Established.",
            labels=["node"],
        )
        for node, row in sorted(nodes.items()):
            up.add_metric([node], int(_node_up(row)))
            if row.get("lease"):
                age.add_metric([node], float(row["lease"]["age_s"]))
            if isinstance(row.get("announced"), list):
                announced.add_metric([node], len(row["announced"]))
            bgp.add_metric([node], int("Established" in str(row.get("bgp", ""))))
        store = GaugeMetricFamily(
            "lbaas_tier_lease_store_up", "1 while the tier's lease store can be read."
        )
        store.add_metric([], int(status.get("lease_store") == "ok"))
        yield from (up, age, announced, bgp, store)


def tier_registry(status: TierStatus) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TierCollector(status))
    return registry
