"""Leader election for the control plane's singleton loops (issue 29.3).

Some loops must run in one process of a control plane however many run: the distributed
status poll, housekeeping, the tier's lease watcher. Two health managers on two hosts
would otherwise both poll every node and both write statuses. ``Leadership`` is the lease
``leader/<loop>`` held through ``LeaseKeeper``: the process holding it leads, the others
wait and take it when it is released (a clean stop) or expires (a crash, a partition).
A loop asks ``leads()`` before each round; like a tier node, a leader that cannot renew
stops leading by its own clock before the engine lets another take over, so two never
lead at once (the engine's clock and the holder's only need the same rate).

With the embedded engine (``lbaas serve``, one process) each process leads its own loops,
as before there was an election.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid

from lbaas.coordination.base import Coordinator
from lbaas.coordination.keeper import Clock, KeeperLoop, LeaseKeeper

log = logging.getLogger(__name__)


def process_holder() -> str:
    """This process's name as a leader: host, pid and a random tag (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Leadership:
    def __init__(
        self,
        coordinator: Coordinator,
        loop: str,
        ttl: float,
        *,
        holder: str | None = None,
        clock: Clock = time.monotonic,
        owns_engine: bool = False,
    ) -> None:
        self.loop = loop
        self._owns_engine = owns_engine
        self.keeper = LeaseKeeper(
            coordinator, f"leader/{loop}", holder or process_holder(), ttl, clock,
            self._won, self._lost,
        )  # fmt: skip
        self._runner = KeeperLoop(self.keeper, ttl / 3)

    def _won(self) -> None:
        log.warning("leading %s (%s)", self.loop, self.keeper.holder)

    def _lost(self) -> None:
        log.warning("no longer leading %s (%s)", self.loop, self.keeper.holder)

    def leads(self) -> bool:
        """Whether this process may run a round of the loop now."""
        return self.keeper.check()

    def start(self) -> Leadership:
        self._runner.start()
        return self

    def stop(self) -> None:
        """Stop campaigning; a leader releases, so another takes over at once."""
        self._runner.stop(release=True)
        if self._owns_engine:
            self.keeper.coordinator.close()
