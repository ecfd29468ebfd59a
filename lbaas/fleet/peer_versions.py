"""The wire version each agent stated, as one controller process has heard it.

Every ``AgentClient`` given a ``PeerVersions`` records here the version the agent's last
answer stated (``lbaas.wire.versions``), and the health manager's receiver what each host
heartbeat states. The version *in use* is the lowest of them: while one agent speaks
version 1 (an agent of the previous release during a rolling upgrade) the process logs
which one, once, and keeps its version-2 features from that agent alone (each feature is
chosen per agent, ``AgentClient.speaks``); when the last one is gone (upgraded, no longer
enrolled: ``retain``, or not heard for ``forget_after``) it logs ``every agent speaks wire
version 2`` once. ``lbaas.metrics.wire_versions`` shows the figures.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from lbaas.wire.versions import WIRE_VERSION

log = logging.getLogger(__name__)

#: Seconds a health manager keeps an agent it no longer hears (host heartbeats come every
#: few seconds: ten minutes of silence is a host deleted, or down for long).
HEARD_FORGET_AFTER = 600.0
#: Seconds a worker keeps an agent it has not called (it calls only to converge).
CALLED_FORGET_AFTER = 3600.0


class PeerVersions:
    """Thread-safe: workers' converges and the health manager's rounds record at once."""

    def __init__(
        self, forget_after: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """``forget_after``: seconds after which an agent not heard from is left out (a
        host deleted or gone for good; None: kept until ``retain`` leaves it out)."""
        self._seen: dict[str, tuple[int, float]] = {}  # peer: (version, when heard)
        self._lock = threading.Lock()
        self._in_use: int | None = None  # None: no agent heard yet
        self._forget_after = forget_after
        self._clock = clock
        self._pruned_at = clock()

    def record(self, peer: str, version: int) -> None:
        """``peer`` (a host id) stated ``version`` in its last answer or heartbeat."""
        with self._lock:
            known = self._seen.get(peer)
            now = self._clock()
            self._seen[peer] = (version, now)
            if known is not None and known[0] == version:
                # Heard again: a look for silent agents now and then, not per heartbeat.
                if (
                    self._forget_after is not None
                    and now - self._pruned_at > self._forget_after / 10
                ):
                    self._settle()
                return
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
        """Forgets agents silent too long, logs a change of the version in use (called
        with the lock held)."""
        if self._forget_after is not None:
            self._pruned_at = self._clock()
            since = self._pruned_at - self._forget_after
            for silent in [peer for peer, (_, at) in self._seen.items() if at < since]:
                del self._seen[silent]
        if not self._seen:
            return
        lowest = min(version for version, _ in self._seen.values())
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

    def snapshot(self) -> dict[str, int]:
        """Each agent's last stated version, by host id."""
        with self._lock:
            self._settle()
            return {peer: version for peer, (version, _) in self._seen.items()}

    def in_use(self) -> int:
        """The lowest version an agent stated (this code's own before any answer)."""
        return min(self.snapshot().values(), default=WIRE_VERSION)

    def older(self) -> list[str]:
        """The agents that stated a version below this code's, sorted."""
        return sorted(peer for peer, version in self.snapshot().items() if version < WIRE_VERSION)
