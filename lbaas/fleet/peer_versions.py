"""The wire version each agent stated, as one controller process has heard it.

Every ``AgentClient`` given a ``PeerVersions`` records here the version the agent's last
answer stated (``lbaas.wire.versions``). The version *in use* is the lowest of them: while
one agent speaks version 1 (an agent of the previous release during a rolling upgrade) the
process logs which one, once, and keeps its version-2 features from that agent alone
(each feature is chosen per agent, ``AgentClient.speaks``); when the last one is gone
(upgraded, or no longer enrolled: ``retain``) it logs ``every agent speaks wire version
2`` once. ``lbaas.metrics.wire_versions`` shows the figures.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from lbaas.wire.versions import WIRE_VERSION

log = logging.getLogger(__name__)


class PeerVersions:
    """Thread-safe: workers' converges and the health manager's rounds record at once."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._in_use: int | None = None  # None: no agent heard yet

    def record(self, peer: str, version: int) -> None:
        """``peer`` (a host id) stated ``version`` in its last answer."""
        with self._lock:
            if self._seen.get(peer) == version:
                return
            self._seen[peer] = version
            if version < WIRE_VERSION:
                log.warning(
                    "agent %s speaks wire version %d (an older release): this controller "
                    "speaks it to that agent, without the features of version %d, until "
                    "it is upgraded",
                    peer,
                    version,
                    WIRE_VERSION,
                )
            self._settle()

    def retain(self, peers: Iterable[str]) -> None:
        """Forget every agent but ``peers`` (the hosts enrolled now)."""
        keep = set(peers)
        with self._lock:
            for gone in [peer for peer in self._seen if peer not in keep]:
                del self._seen[gone]
            self._settle()

    def _settle(self) -> None:
        """Logs a change of the version in use (called with the lock held)."""
        if not self._seen:
            return
        lowest = min(self._seen.values())
        if lowest == self._in_use:
            return
        self._in_use = lowest
        if lowest >= WIRE_VERSION:
            log.info(
                "every agent speaks wire version %d (%d heard from): its features are in use",
                WIRE_VERSION,
                len(self._seen),
            )
        else:
            log.info("wire version in use: %d (the oldest agent's)", lowest)

    def version_of(self, peer: str) -> int | None:
        """What ``peer`` last stated; None: not heard from yet."""
        with self._lock:
            return self._seen.get(peer)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._seen)

    def in_use(self) -> int:
        """The lowest version an agent stated (this code's own before any answer)."""
        with self._lock:
            return min(self._seen.values(), default=WIRE_VERSION)

    def older(self) -> list[str]:
        """The agents that stated a version below this code's, sorted."""
        with self._lock:
            return sorted(peer for peer, version in self._seen.items() if version < WIRE_VERSION)
