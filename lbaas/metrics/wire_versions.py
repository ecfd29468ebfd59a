"""The wire versions of the controller-agent link (``lbaas.wire.versions``), at scrape time.

``lbaas_wire_version`` is this process's own (what its code speaks);
``lbaas_agent_wire_version{host}`` what each agent last stated to it and
``lbaas_agent_wire_version_in_use`` the lowest of those (``PeerVersions.in_use``): below
``lbaas_wire_version`` while an agent of the previous release is enrolled, equal once
every agent is upgraded. The figures are what this process heard, not asked at scrape time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lbaas.wire.versions import WIRE_VERSION


class AgentVersions(Protocol):
    """What the collector reads of ``lbaas.fleet.peer_versions.PeerVersions`` (named, not
    imported: the API shows this module's figures and knows nothing of the fleet)."""

    def snapshot(self) -> dict[str, int]: ...

    def in_use(self) -> int: ...


class WireVersionCollector(Collector):
    """This process's wire version; with ``versions``, the agents' too."""

    def __init__(self, versions: AgentVersions | None = None) -> None:
        self._versions = versions

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "lbaas_wire_version",
            "The controller-agent wire version this process's code speaks.",
            value=WIRE_VERSION,
        )
        if self._versions is None:
            return
        agents = GaugeMetricFamily(
            "lbaas_agent_wire_version",
            "The wire version each agent stated in its last answer to this process.",
            labels=["host"],
        )
        for host, version in sorted(self._versions.snapshot().items()):
            agents.add_metric([host], version)
        yield agents
        yield GaugeMetricFamily(
            "lbaas_agent_wire_version_in_use",
            "The lowest wire version an agent stated: the features this process may use "
            "with every agent (this code's own version until an agent answered).",
            value=self._versions.in_use(),
        )
