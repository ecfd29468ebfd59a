"""``lbaas tier watch``: the control plane's lease watcher as a long-running process.

Its own process rather than a thread of ``lbaas health``: it must run where it reaches the
router's BIRD control socket and the nodes' health ports (in the lab, the router's
namespace, so its health checks take the router's path to the nodes), it needs no database,
and a tier must keep being watched whichever amphora health manager is busy or restarted.

Every half renewal interval it sweeps (``LeaseWatcher``: a node is marked down after
``tier.lease_missed_renewals`` missed renewals *and* a failed health port), then reconciles
the router with the verdicts: a node marked down has its router BGP session disabled
(``birdc disable NODE``: its routes go whatever the node still does), a node up has it
enabled. Reconciling from the verdicts, not from the sweep's events, means a command that
failed (the router's BIRD restarting) is retried at the next sweep, and a watcher that starts
enables every node it does not hold down, whatever a previous watcher left. Per-node gauges
(``lbaas.tier.metrics``) are served on ``tier.metrics_host:metrics_port``.

Given a coordination engine instead of ``tier.lease_store`` (issue 29.2), the verdicts are
``CoordinatedWatcher``'s: a node is marked down as soon as the engine no longer lists its
lease (the node has withdrawn by itself by then), and nothing changes while the engine
cannot be asked.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from typing import Any

from prometheus_client import start_http_server

from lbaas.config import TierSettings
from lbaas.coordination.base import Coordinator
from lbaas.coordination.leader import Leadership
from lbaas.tier.coordinated_leases import CoordinatedLeaseReader, CoordinatedWatcher
from lbaas.tier.health_port import tcp_health_check
from lbaas.tier.host.bird import BirdCommandFailed, BirdControl
from lbaas.tier.lease import Clock, HealthCheck, LeasePolicy, LeaseTable
from lbaas.tier.lease_store import LeaseReader, SqliteLeaseStore
from lbaas.tier.metrics import tier_registry
from lbaas.tier.status import router_status
from lbaas.tier.watcher import LeaseWatcher

log = logging.getLogger(__name__)


class TierWatch:
    def __init__(
        self,
        tier: TierSettings,
        *,
        router: BirdControl | None = None,
        health: HealthCheck | None = None,
        clock: Clock = time.monotonic,
        coordinator: Coordinator | None = None,
    ) -> None:
        """From settings; ``router`` and ``health`` replace the router's BIRD and the TCP
        health check (tests pass fakes); ``coordinator`` holds the leases instead of
        ``tier.lease_store``."""
        if not tier.nodes or not tier.router_bird_socket:
            raise ValueError("lbaas tier watch needs tier.nodes and tier.router_bird_socket")
        if not tier.lease_store and coordinator is None:
            raise ValueError("lbaas tier watch needs tier.lease_store or a coordination engine")
        self.policy = LeasePolicy.from_settings(tier)
        self.nodes = tuple(sorted(tier.nodes))
        self.router = router or BirdControl(Path(tier.router_bird_socket))
        self.table = LeaseTable(self.policy, clock)
        self.store: LeaseReader
        self.watcher: LeaseWatcher | CoordinatedWatcher
        if coordinator is None:
            self._watch_file(tier, health, Path(tier.lease_store))
        else:
            self.store = CoordinatedLeaseReader(coordinator, self.policy.lifetime)
            self.watcher = CoordinatedWatcher(coordinator, self.nodes, self._noted, self._noted)
        self._applied: dict[str, bool] = {}  # node -> enabled on the router, as last done
        self._tier = tier
        self._stop = threading.Event()
        self._server: Any = None

    def _watch_file(self, tier: TierSettings, health: HealthCheck | None, path: Path) -> None:
        """Leases in the SQLite file, with TLB's double check (expired and health failed)."""
        store = SqliteLeaseStore(path, tier.lease_store_timeout)
        for node in self.nodes:
            self.table.join(node)
        policy = self.policy
        health = health or tcp_health_check(tier.nodes, policy.health_tries, policy.health_timeout)
        self.store = store
        self.watcher = LeaseWatcher(self.table, store, health, self._noted, self._noted)

    def is_down(self, node: str) -> bool:
        if isinstance(self.watcher, CoordinatedWatcher):
            return self.watcher.is_down(node)
        return self.table.is_down(node)

    def _noted(self, node: str) -> None:
        """The sweep's withdraw/restore events: the reconcile after it acts on them."""

    def status(self) -> dict[str, Any]:
        return router_status(self.router, self.store, self.nodes, self.policy, self.is_down)

    def sweep(self) -> None:
        report = self.watcher.sweep()
        for node in sorted(report.withdrawn):
            log.warning("tier node %s marked down: %s", node, self._why_down())
        for node in sorted(report.restored):
            log.warning("tier node %s renews again: restored", node)
        if report.suspect_but_healthy:
            log.info(
                "leases expired but health ports answer (kept): %s%s",
                sorted(report.suspect_but_healthy),
                "" if report.store_available else " (lease store unavailable)",
            )
        self.reconcile()

    def _why_down(self) -> str:
        if isinstance(self.watcher, CoordinatedWatcher):
            return "its lease expired on the coordination engine"
        return "lease expired and health port failed"

    def reconcile(self) -> None:
        for node in self.nodes:
            enabled = not self.is_down(node)
            if self._applied.get(node) == enabled:
                continue
            try:
                self.router.command("enable" if enabled else "disable", node)
            except BirdCommandFailed as exc:
                log.error("router not told about %s (retried next sweep): %s", node, exc)
                continue
            self._applied[node] = enabled
            log.info("router session with %s %s", node, "enabled" if enabled else "disabled")

    def serve_metrics(self) -> int | None:
        """Serve /metrics when a port is set; the port bound."""
        if not self._tier.metrics_port:
            return None
        registry = tier_registry(self.status)
        host, port = self._tier.metrics_host, self._tier.metrics_port
        self._server, _ = start_http_server(port, addr=host, registry=registry)
        return int(self._server.server_port)

    def run(self, leadership: Leadership | None = None) -> None:
        """Sweep until ``stop`` (SIGTERM/SIGINT in ``main``); with ``leadership``, only
        while this watcher leads ``tier-watch`` (several watchers, one acting)."""
        leads = leadership.leads if leadership is not None else (lambda: True)
        if leads():
            self.reconcile()
        while not self._stop.wait(self.policy.renew_interval / 2):
            if not leads():
                self._applied.clear()  # a new leader reconciles everything afresh
                continue
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - one bad sweep must not end the watch
                log.exception("tier sweep failed")
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def stop(self) -> None:
        self._stop.set()


def main(tier: TierSettings, coordinator: Coordinator | None = None) -> int:
    watch = TierWatch(tier, coordinator=coordinator)
    # On an engine, several watchers may run: one sweeps and tells the router.
    leadership = (
        Leadership(coordinator, "tier-watch", max(1.0, watch.policy.lifetime)).start()
        if coordinator is not None
        else None
    )
    port = watch.serve_metrics()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: watch.stop())
    log.warning(
        "watching tier nodes %s (lease store %s, metrics on %s)",
        ", ".join(watch.nodes),
        tier.lease_store or "the coordination engine",
        f"{tier.metrics_host}:{port}" if port else "nothing",
    )
    print("ready", flush=True)
    watch.run(leadership)
    if leadership is not None:
        leadership.stop()
    return 0
