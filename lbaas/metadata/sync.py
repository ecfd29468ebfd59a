"""Keeping this host's metadata proxies to the ports bound to it.

Each round reads the ports bound to this host from the control plane. The first round, and
the first after the registry could not be read (the agent reconnecting), is a full sync:
every proxy namespace on the host is compared with the networks that need one, missing
ones are made, unneeded ones (a previous agent's too) removed, and every needed one is
repaired. Other rounds are incremental: only the networks that gained their first port or
lost their last one since the previous round are touched, and a proxy whose HAProxy died
is restarted. The in-memory port view the signer reads is replaced on every round.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lbaas.background import BackgroundLoop
from lbaas.metadata.base import PortSource, ProxyHost, RegistryUnavailable
from lbaas.metadata.namespaces import NETWORK_ID
from lbaas.metadata.proxy import StaticPortView

log = logging.getLogger(__name__)

#: A proxy that failed to start is retried after 1 s, then 2, 4… up to this (not every round).
MAX_RETRY_DELAY = 30.0


class MetadataSync:
    def __init__(
        self,
        source: PortSource,
        proxies: ProxyHost,
        view: StaticPortView,
        host_id: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._proxies = proxies
        self._view = view
        self._host_id = host_id
        self._connected = False
        self._need_full = False
        self._known: set[str] = set()
        self._clock = clock
        self._retry: dict[str, tuple[float, float]] = {}  # network -> (at, delay)
        self.full_syncs = 0

    def sync_once(self) -> None:
        """One round: full after start or a reconnection, else incremental."""
        try:
            ports = self._source.ports_of_host(self._host_id)
        except RegistryUnavailable as exc:
            if self._connected:
                log.warning("port registry unreachable (%s); proxies left as they are", exc)
            self._connected = False
            return
        self._view.replace(ports)
        wanted = {p.network_id for p in ports if NETWORK_ID.match(p.network_id)}
        if not self._connected or self._need_full:
            self._connected, self._need_full = True, False
            self._full(wanted)
        else:
            self._incremental(wanted)
        self._known = wanted

    def _full(self, wanted: set[str]) -> None:
        self.full_syncs += 1
        present = self._proxies.present()
        for network in sorted(present - wanted):
            self._apply("remove", network)
        for network in sorted(wanted):
            self._apply("ensure", network)
        log.info("metadata full sync: %d proxies, %d removed", len(wanted), len(present - wanted))

    def _incremental(self, wanted: set[str]) -> None:
        for network in sorted(self._known - wanted):
            self._apply("remove", network)
        for network in sorted(wanted - self._known):
            self._apply("ensure", network)
        for network in sorted(wanted & self._known):
            due = self._retry.get(network, (0.0, 0.0))[0] <= self._clock()
            if due and not self._proxies.alive(network):
                log.warning("metadata proxy of network %s died; restarting it", network)
                self._apply("ensure", network)

    def _apply(self, action: str, network: str) -> None:
        try:
            if action == "remove":
                self._proxies.remove(network)
            else:
                self._proxies.ensure(network)
        except Exception:  # noqa: BLE001 - one network's failure must not stop the others
            log.exception("metadata proxy of network %s: %s failed", network, action)
            # An ensure is retried later (its HAProxy is not alive); a remove by a full
            # sync, which looks at every namespace.
            self._need_full = self._need_full or action == "remove"
            if action == "ensure":
                delay = min(MAX_RETRY_DELAY, max(1.0, 2 * self._retry.get(network, (0, 0.5))[1]))
                self._retry[network] = (self._clock() + delay, delay)
        else:
            self._retry.pop(network, None)
            log.info("metadata proxy of network %s: %s done", network, action)


class SyncLoop(BackgroundLoop):
    """Runs ``sync.sync_once`` every ``interval`` seconds in a thread until stopped."""

    def __init__(self, sync: MetadataSync, interval: float) -> None:
        self._sync = sync
        self._interval = interval
        super().__init__("metadata-sync", stop_timeout=30.0)

    def _run(self) -> None:
        while True:
            try:
                self._sync.sync_once()
            except Exception:  # noqa: BLE001 - logged; the next round tries again
                log.exception("metadata sync round failed")
            if self._stop.wait(self._interval):
                return
