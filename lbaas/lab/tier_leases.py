"""Leases in a lab tier: a node agent per node, the control plane's watcher in this process.

Each node runs ``lbaas.tier.node_agent`` (registered with the lab as the node's host, so
``host-down`` kills it), renewing its lease in ``<services_dir>/tier/leases.sqlite`` and
answering on its health port on the fabric. The watcher sweeps in a thread: it checks a
node's health port from the router's namespace (a TCP connect; ``tier.health_check_tries``
tries of ``tier.health_check_timeout`` seconds, 2 of 1 s by default) and withdraws
a node marked down by disabling the router's BGP session with it, which removes the node's
routes whatever the node itself still does, and by rewriting the router's static routes of
``static_vips`` (the tier without BGP) to the nodes still up; a node renewing again gets its
session enabled and its static next hops back. Given a metrics address, the
watcher serves ``lbaas_tier_node_*`` on ``/metrics`` while it sweeps, with its own
verdict (``down``) beside what ``lbaas lab tier`` shows.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from prometheus_client import start_http_server

from lbaas.host.commands import run_command
from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, address, bare
from lbaas.lab.tier import ROUTER, LabTier, node_protocol
from lbaas.lab.tier_status import tier_status
from lbaas.tier.lease import LeasePolicy, LeaseTable
from lbaas.tier.lease_store import SqliteLeaseStore
from lbaas.tier.metrics import tier_registry
from lbaas.tier.watcher import LeaseWatcher, SweepReport

HEALTH_PORT = 9180


class LabLeases:
    def __init__(
        self,
        tier: LabTier,
        policy: LeasePolicy | None = None,
        static_vips: Sequence[str] = (),
        metrics_address: tuple[str, int] | None = None,
    ) -> None:
        self.tier = tier
        self.static_vips = tuple(static_vips)
        self.policy = policy or LeasePolicy()
        self.store = SqliteLeaseStore(tier.lab.services_dir / "tier" / "leases.sqlite")
        self.store.create()
        self.table = LeaseTable(self.policy, time.monotonic)
        self.watcher = LeaseWatcher(
            self.table, self.store, self._health, self._withdraw, self._restore
        )
        self.reports: list[SweepReport] = []
        self.agents: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.metrics_address = metrics_address
        self.metrics_port: int | None = None  # the bound port while served
        self._server: Any = None

    def _fabric(self, index: int) -> str:
        return bare(address(self.tier.lab.state().networks["fab"], FIRST_HOST + index))

    def start_agent(self, index: int) -> None:
        lab = self.tier.lab
        namespace, node = lab.names.host(index), node_protocol(index)
        argv = [sys.executable, "-m", "lbaas.tier.node_agent", str(self.store.path), node]
        argv += [self._fabric(index), str(HEALTH_PORT), str(self.policy.renew_interval)]
        directory = lab.services_dir / "tier" / node
        log = directory / "agent.log"
        pid = processes.start(namespace, argv, log, directory)
        lab.register_process(node, pid)
        self.agents[index] = pid
        processes.wait_listening(namespace, self._fabric(index), HEALTH_PORT, log, 20.0)
        self.table.join(node)

    def _health(self, node: str) -> bool:
        """Connect to the node's health port from the router: a connection is the answer.

        Several tries, each given a whole second by default: on a loaded machine a single
        short try can miss a healthy node, and a false "failed" during a store outage
        withdraws it.
        """
        index = int(node[1:])
        connect = f"exec 3<>/dev/tcp/{self._fabric(index)}/{HEALTH_PORT}"
        argv = ["ip", "netns", "exec", self.tier.lab.names.router]
        argv += ["timeout", str(self.policy.health_timeout), "bash", "-c", connect]
        tries = range(self.policy.health_tries)
        return any(run_command(argv).returncode == 0 for _ in tries)

    def _withdraw(self, node: str) -> None:
        self.tier.control(ROUTER).command("disable", node)
        self._route_static()

    def _restore(self, node: str) -> None:
        self.tier.control(ROUTER).command("enable", node)
        self._route_static()

    def _route_static(self) -> None:
        """The static VIPs' routes to exactly the nodes not marked down."""
        up = [i for i in self.tier.nodes if not self.table.is_down(node_protocol(i))]
        for vip in self.static_vips:
            self.tier.route_statically(vip, up)

    def status(self) -> dict[str, Any]:
        """``lbaas lab tier``'s status with the watcher's verdict per node (``down``)."""
        shown = tier_status(self.tier.lab, self.policy)
        for node, row in shown["nodes"].items():
            row["down"] = self.table.is_down(node)
        return shown

    def start(self) -> None:
        """Sweep every half renewal interval in a thread until ``stop``; serve metrics."""
        if self.metrics_address is not None and self._server is None:
            host, port = self.metrics_address
            registry = tier_registry(self.status)
            self._server, _ = start_http_server(port, addr=host, registry=registry)
            self.metrics_port = int(self._server.server_port)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="lease-watcher", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.policy.renew_interval / 2):
            self.reports.append(self.watcher.sweep())

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
