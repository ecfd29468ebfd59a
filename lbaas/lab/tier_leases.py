"""Leases in a lab tier: a node agent per node, the control plane's watcher in this process.

Each node runs ``lbaas.l4.tier.node_agent`` (registered with the lab as the node's host, so
``host-down`` kills it), renewing its lease in ``<services_dir>/tier/leases.sqlite`` and
answering on its health port on the fabric. The watcher sweeps in a thread: it checks a
node's health port from the router's namespace (a TCP connect, two tries of 1 s) and withdraws
a node marked down by disabling the router's BGP session with it, which removes the node's
routes whatever the node itself still does, and by rewriting the router's static routes of
``static_vips`` (the tier without BGP) to the nodes still up; a node renewing again gets its
session enabled and its static next hops back.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence

from lbaas.agent.host.commands import run_command
from lbaas.l4.tier.lease import LeasePolicy, LeaseTable
from lbaas.l4.tier.lease_store import SqliteLeaseStore
from lbaas.l4.tier.watcher import LeaseWatcher, SweepReport
from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, address, bare
from lbaas.lab.tier import ROUTER, LabTier, node_protocol

HEALTH_PORT = 9180
_CONNECT_TIMEOUT = 1.0
_TRIES = 2


class LabLeases:
    def __init__(
        self, tier: LabTier, policy: LeasePolicy | None = None, static_vips: Sequence[str] = ()
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

    def _fabric(self, index: int) -> str:
        return bare(address(self.tier.lab.state().networks["fab"], FIRST_HOST + index))

    def start_agent(self, index: int) -> None:
        lab = self.tier.lab
        namespace, node = lab.names.host(index), node_protocol(index)
        argv = [sys.executable, "-m", "lbaas.l4.tier.node_agent", str(self.store.path), node]
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

        Two tries, each given a whole second: on a loaded machine a single short try can
        miss a healthy node, and a false "failed" during a store outage withdraws it.
        """
        index = int(node[1:])
        connect = f"exec 3<>/dev/tcp/{self._fabric(index)}/{HEALTH_PORT}"
        argv = ["ip", "netns", "exec", self.tier.lab.names.router]
        argv += ["timeout", str(_CONNECT_TIMEOUT), "bash", "-c", connect]
        return any(run_command(argv).returncode == 0 for _ in range(_TRIES))

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

    def start(self) -> None:
        """Sweep every half renewal interval in a thread until ``stop``."""
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
