"""The holder's side of a lease: renew it, and fence yourself the moment it may be gone.

A tier node announces its VIPs only while it holds its lease (TLB's rule): a node that
cannot renew, cut off from the engine, must stop announcing BY ITSELF before the engine
lets the lease expire and the watcher marks it down, without waiting to be told (it could
not be told: it is cut off). ``LeaseKeeper`` is that rule as a pure state machine over a
clock passed in (a fake one in the unit tests):

* an attempt that succeeds makes the lease valid until ``started + ttl``, where
  ``started`` is the local time the attempt was SENT: the engine counts from when it
  received it, later, so the holder's belief always ends first, whatever the network's
  delay or the two clocks' offsets (only their rates must agree, as for any lease);
* an attempt that fails or raises leaves the validity where it was;
* ``check`` at any time past the validity fences (``on_lost``) once; the next successful
  attempt unfences (``on_held``).

``KeeperLoop`` runs it: a renewing thread every ``interval`` and a fencing watchdog that
wakes at the validity's end, so a renewal stuck in a hung connection still fences on time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from lbaas.coordination.base import CoordinationUnavailable, Coordinator, check_lease

log = logging.getLogger(__name__)

Clock = Callable[[], float]  # seconds, monotonic
Action = Callable[[], None]


@dataclass
class LeaseKeeper:
    coordinator: Coordinator
    name: str
    holder: str
    ttl: float
    clock: Clock
    on_held: Action
    on_lost: Action
    valid_until: float = field(default=float("-inf"))
    held: bool = False
    # Whether the last attempt reached the engine (granted or refused), not raised: a
    # tier node tells an engine outage from its own isolation by it (peer_witness).
    engine_answered: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        check_lease(self.name, self.holder, self.ttl)

    def attempt(self) -> bool:
        """Renew once; True when the engine granted it. Transitions run their action."""
        started = self.clock()
        try:
            granted = self.coordinator.renew(self.name, self.holder, self.ttl)
            if not self.engine_answered:
                log.warning("lease %s: the engine answers again", self.name)
            self.engine_answered = True
        except CoordinationUnavailable as exc:
            if self.engine_answered:
                log.warning("lease %s: the engine is out of reach: %s", self.name, exc)
            granted = self.engine_answered = False
        if granted:
            with self.lock:
                self.valid_until = max(self.valid_until, started + self.ttl)
        self.check()
        return granted

    def check(self) -> bool:
        """Whether the lease is still held now; fence or unfence on a change."""
        with self.lock:
            now_held = self.clock() < self.valid_until
            changed, self.held = now_held != self.held, now_held
        if changed:
            (self.on_held if now_held else self.on_lost)()
        return now_held

    def remaining(self) -> float:
        with self.lock:
            return self.valid_until - self.clock()

    def release(self) -> None:
        """Give the lease back (a clean stop): fenced first, then released."""
        with self.lock:
            self.valid_until = float("-inf")
        self.check()
        try:
            self.coordinator.release(self.name, self.holder)
        except CoordinationUnavailable:
            pass  # it expires by itself


class KeeperLoop:
    """Renew every ``interval`` s in one thread; fence on time in another."""

    def __init__(self, keeper: LeaseKeeper, interval: float) -> None:
        if not 0 < interval < keeper.ttl:
            raise ValueError(f"renew interval {interval} must be below the ttl {keeper.ttl}")
        self.keeper = keeper
        self.interval = interval
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for target, name in ((self._renew, "lease-renew"), (self._watchdog, "lease-fence")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _renew(self) -> None:
        while not self._stop.is_set():
            started = self.keeper.clock()
            self.keeper.attempt()
            self._stop.wait(max(0.0, self.interval - (self.keeper.clock() - started)))

    def _watchdog(self) -> None:
        while not self._stop.is_set():
            self.keeper.check()
            # Wake when the lease would end (a renewal may have moved that on meanwhile).
            left = self.keeper.remaining()
            self._stop.wait(min(self.interval, left) if left > 0 else self.interval)

    def stop(self, *, release: bool = True) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        if release:
            self.keeper.release()
