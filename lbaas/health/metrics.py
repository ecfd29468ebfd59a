"""The health manager's own figures for ``/metrics``, read from its parts at scrape time.

The receiver and the sweeper already count what they do (``ReceiverCounters``,
``StaleAmphoraSweeper.failovers_requested``, ``alarm``); this collector only shows those
counts, so the heartbeat path gains no Prometheus call per datagram.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lbaas.health.receiver import HeartbeatReceiver
from lbaas.health.stale import StaleAmphoraSweeper


class HealthManagerCollector(Collector):
    def __init__(self, receiver: HeartbeatReceiver, sweeper: StaleAmphoraSweeper) -> None:
        self._receiver = receiver
        self._sweeper = sweeper

    def collect(self) -> Iterator[Metric]:
        heartbeats = CounterMetricFamily(
            "lbaas_heartbeats",
            "Heartbeat datagrams this health manager received, by outcome: accepted, "
            "ignored (unknown amphora), rejected_signature, rejected_replay (a copy or an "
            "older one), rejected_late (outside the freshness window), malformed, dropped "
            "(queue full), failed.",
            labels=["outcome"],
        )
        for outcome, number in asdict(self._receiver.counters.snapshot()).items():
            heartbeats.add_metric([outcome], float(number))
        yield heartbeats
        yield CounterMetricFamily(
            "lbaas_failovers_started",
            "Amphora failovers this health manager requested for silence.",
            value=float(self._sweeper.failovers_requested),
        )
        yield GaugeMetricFamily(
            "lbaas_amphorae_agent_silent",
            "Amphorae whose agent stopped heartbeating while their listeners still answer "
            "on the VIP: not failed over; restart or resume their agent.",
            value=float(len(self._sweeper.agent_silent)),
        )
        # scope="all" is the failover-storm guard; a per-load-balancer breaker would add
        # its open count under its own scope value here.
        breaker = GaugeMetricFamily(
            "lbaas_failover_circuit_open",
            "1 while automatic failover is stopped by the storm guard, else 0.",
            labels=["scope"],
        )
        breaker.add_metric(["all"], 1.0 if self._sweeper.alarm is not None else 0.0)
        yield breaker
