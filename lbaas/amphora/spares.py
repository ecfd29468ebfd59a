"""The spare amphora slots of one agent (``agent.spare_amphorae``), kept full in the background.

A create or a failover that lands on this host used to pay for a namespace and a HAProxy
start before its configuration could even be loaded. With spares, the registry hands a new
amphora a ready slot (``claim_for``; see ``spare_slot`` for what a slot is and how it is
handed over), so its first converge only reloads a running master. Once that converge is
done (``refill_soon``; not while it runs, which it would slow down on a busy host), the
refill thread prepares slots one at a time until the pool is full again; a converge
never waits for one: an empty pool means the amphora is built as without spares.
A slot that cannot be handed over is discarded and the amphora built the ordinary way.

Spares live exactly as long as the agent that knows them: ``recover`` (at start) discards
whatever an earlier agent left, ``close`` (at stop) discards the ready ones. Adopting an
earlier agent's spares would save a few HAProxy starts at boot, but a slot whose state is
unsure (half made, half claimed) must be torn down anyway, and starting from none keeps
one rule for all of them.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Protocol

from lbaas.amphora.spare_slot import SpareSlot
from lbaas.host.base import HostOpsError
from lbaas.wire.spares import SpareInfo, SparesStatus

log = logging.getLogger(__name__)

#: Seconds before a failed refill is tried again.
RETRY_AFTER = 5.0


class SlotMaker(Protocol):
    """What the pool needs of ``spare_slot.SpareSlots`` (tests pass a fake)."""

    def prepare(self) -> SpareSlot: ...

    def claim(self, slot: SpareSlot, amphora_id: str) -> None: ...

    def discard(self, directory: Path) -> None: ...

    def leftovers(self) -> list[Path]: ...


class SparePool:
    """``size`` ready slots, refilled by a thread of its own once ``start`` is called."""

    def __init__(self, maker: SlotMaker, size: int, *, retry_after: float = RETRY_AFTER) -> None:
        self.size = size
        self._maker = maker
        self._retry_after = retry_after
        self._ready: list[SpareSlot] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.taken = 0
        self.last_error: str | None = None

    def recover(self) -> int:
        """Discard the slots an earlier agent left; how many there were."""
        leftovers = self._maker.leftovers()
        for directory in leftovers:
            self._discard(directory)
        if leftovers:
            log.info("discarded %d spare amphora slot(s) of an earlier agent", len(leftovers))
        return len(leftovers)

    def claim_for(self, amphora_id: str) -> SpareSlot | None:
        """A ready slot made amphora ``amphora_id``'s, or None (none ready, or it failed)."""
        with self._lock:
            slot = self._ready.pop(0) if self._ready else None
        if slot is None:
            return None
        try:
            self._maker.claim(slot, amphora_id)
        except (OSError, HostOpsError) as exc:
            log.warning("spare %s not taken by amphora %s: %s", slot.name, amphora_id, exc)
            self._discard(slot.directory)
            return None
        self.taken += 1
        log.info("amphora %s took spare %s", amphora_id, slot.name)
        return slot

    def refill_soon(self) -> None:
        """Wake the refill thread: called once the amphora that took a slot has converged,
        not when it took it, so that preparing the next slot (a ``haproxy -c`` and a
        start) does not compete for the CPU with that amphora's own reload."""
        self._wake.set()

    def fill(self) -> int:
        """Prepare slots until the pool is full (or stopping); how many were made.

        A failed preparation is raised; what was ready stays ready.
        """
        made = 0
        while not self._stopping.is_set():
            with self._lock:
                if len(self._ready) >= self.size:
                    break
            slot = self._maker.prepare()
            with self._lock:
                self._ready.append(slot)
            made += 1
        return made

    def start(self) -> None:
        """Fill the pool in the background, and again after every slot taken."""
        self._thread = threading.Thread(target=self._run, name="spare-amphorae", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()  # before filling: a slot taken meanwhile wakes the next round
            timeout: float | None = None
            # Top of the refill loop: a failure is logged, kept and retried later.
            try:
                self.fill()
                self.last_error = None
            except Exception as exc:  # noqa: BLE001 - logged, shown by status(), retried
                self.last_error = str(exc)
                log.error("cannot prepare a spare amphora slot: %s", exc)
                timeout = self._retry_after
            self._wake.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Stop refilling and discard every ready slot."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._lock:
            ready, self._ready = self._ready, []
        for slot in ready:
            self._discard(slot.directory)

    def ready_count(self) -> int:
        with self._lock:
            return len(self._ready)

    def status(self) -> SparesStatus:
        with self._lock:
            ready = tuple(
                SpareInfo(name=s.name, namespace=s.namespace, master_pid=s.master_pid)
                for s in self._ready
            )
        return SparesStatus(
            configured=self.size, ready=ready, taken=self.taken, last_error=self.last_error
        )

    def _discard(self, directory: Path) -> None:
        try:
            self._maker.discard(directory)
        except (OSError, HostOpsError) as exc:
            log.error("cannot discard spare amphora slot %s: %s", directory.name, exc)
