"""Whose fault is a lapsed lease: the engine's, or this node's? The other nodes witness.

A tier node fences itself when it may have lost its lease (``node_lease``), so that a node
cut off from the network stops announcing before the watcher marks it down. Taken alone,
that rule turns an outage of the lease engine (every etcd member or the PostgreSQL down)
into an outage of every VIP: all nodes lose their leases at once and all withdraw, though
each of them forwards perfectly well. TLB's double check exists for exactly this case, on
the watcher's side (a lapsed lease withdraws a node only if its health port fails too).

``WitnessedFence`` gives the node the same double check. From the first renewal that is
late (the lease has less left than two intervals' worth below its TTL), the node asks the
other nodes' health ports every renewal interval, so a verdict is ready before the lease
lapses. When it lapses the node keeps announcing only if

* the engine is out of reach (an engine that answered and refused the lease always fences),
* the node has held its lease before (a node that never held one stays fenced), and
* a majority of the whole tier, the node itself included, answered within the last two
  intervals.

A node cut off by a partition reaches neither the engine nor its peers and fences, as
before; nodes that all lose the engine but still reach one another announce on, and the
watcher, which cannot read the engine either, marks nothing down. Once the engine is back
the lease is granted again and everything is as it was.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from lbaas.coordination.keeper import Clock

log = logging.getLogger(__name__)

Probe = Callable[[str, int, float], bool]  # host, port, timeout -> answered


class Fence(Protocol):
    def withdraw(self) -> None: ...

    def announce(self) -> None: ...


@dataclass(frozen=True)
class PeerVerdict:
    """One round of asking the other nodes: when, and how many answered of how many."""

    at: float
    answered: int
    peers: int

    @property
    def majority(self) -> bool:
        """Whether this node and the peers that answered are more than half the tier; never
        without peers to ask (then nothing tells an engine outage from isolation)."""
        return self.peers > 0 and 2 * (self.answered + 1) > self.peers + 1


class PeerWitness:
    """Asks every other node's health port at once; remembers the last verdict."""

    def __init__(
        self, peers: Mapping[str, tuple[str, int]], probe: Probe, timeout: float, clock: Clock
    ) -> None:
        self._peers = dict(peers)
        self._probe = probe
        self._timeout = timeout
        self._clock = clock
        self._last: PeerVerdict | None = None
        self._lock = threading.Lock()
        # One thread per peer, kept: a peer that does not answer costs one timeout, not one each.
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self._peers)))

    def poll(self) -> PeerVerdict:
        started = self._clock()
        answers = list(self._pool.map(self._ask, self._peers.values()))
        verdict = PeerVerdict(started, sum(answers), len(self._peers))
        with self._lock:
            self._last = verdict
        return verdict

    def _ask(self, peer: tuple[str, int]) -> bool:
        return self._probe(peer[0], peer[1], self._timeout)

    def forget(self) -> None:
        with self._lock:
            self._last = None

    def recent(self, max_age: float) -> PeerVerdict | None:
        with self._lock:
            last = self._last
        if last is None or self._clock() - last.at > max_age:
            return None
        return last


class WitnessedFence:
    """A ``LeaseKeeper``'s ``on_held``/``on_lost``, with the engine-outage exception above.

    ``engine_answered`` says whether the keeper's last renewal reached the engine,
    ``lease_left`` how long the lease has left by the node's clock (``LeaseKeeper.remaining``),
    ``ttl`` its full length; ``tick`` runs once per renewal interval (``node_lease``'s
    witness thread)."""

    def __init__(
        self,
        fence: Fence,
        witness: PeerWitness,
        engine_answered: Callable[[], bool],
        lease_left: Callable[[], float],
        ttl: float,
        interval: float,
    ) -> None:
        self._fence = fence
        self._witness = witness
        self._engine_answered = engine_answered
        self._lease_left = lease_left
        # Renewed on time, the lease has at least ttl - interval left (less its delay).
        self._late_below = ttl - 1.5 * interval
        self._max_age = 2 * interval
        self._lock = threading.Lock()
        self._lease_held = False
        self._ever_held = False
        self._announcing = False  # node_lease starts fenced

    def held(self) -> None:
        with self._lock:
            self._lease_held = self._ever_held = True
            log.warning("tier fence: lease held")
            self._set(True)

    def lost(self) -> None:
        with self._lock:
            self._lease_held = False
            announce, why = self._decide()
            log.warning("tier fence: lease lapsed; %s", why)
            self._set(announce)

    def tick(self) -> None:
        """Ask the peers while renewals are late; reconsider a lapsed lease."""
        if self._lease_left() < self._late_below:
            self._witness.poll()
        else:
            self._witness.forget()
        with self._lock:
            if not self._lease_held:
                announce, why = self._decide()
                if announce != self._announcing:
                    log.warning("tier fence: %s", why)
                self._set(announce)

    @property
    def announcing(self) -> bool:
        with self._lock:
            return self._announcing

    def _decide(self) -> tuple[bool, str]:
        """Whether to announce with the lease lapsed, and why."""
        verdict = self._witness.recent(self._max_age)
        if self._engine_answered() or not self._ever_held:
            return False, "the engine refused it"
        if verdict is None or not verdict.majority:
            seen = "no recent answer" if verdict is None else f"{verdict.answered} answered"
            return False, f"lease engine and the tier out of reach ({seen})"
        why = f"{verdict.answered} of {verdict.peers} other nodes answer, announcing on"
        return True, f"lease engine out of reach, {why}"

    def _set(self, announce: bool) -> None:
        if announce == self._announcing:
            return
        self._announcing = announce
        if announce:
            self._fence.announce()
        else:
            self._fence.withdraw()
