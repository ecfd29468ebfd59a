"""Liveness and counter updates heard since the last flush, waiting to be written together.

The receiver thread adds to it for every heartbeat; the flusher thread takes everything
at once every flush interval and writes it in two transactions (see ``sql_store``).
Liveness keeps only the newest time per amphora; counter updates are kept in arrival
order, because folding counters is not commutative (a reload is recognised by a counter
going down between two consecutive reports).

What a flush could not write because another health manager held the amphora's row
(``carry_over``) is put back ahead of what arrived since, so that it is written at the
next flush if it is still newer than what that manager stored.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass, field

from lbaas.health.freshness import HeartbeatStamp
from lbaas.health.store import CounterUpdate
from lbaas.model.graph import AmphoraId, LoadBalancerId


@dataclass(frozen=True, slots=True)
class StampedUpdate:
    """One heartbeat's counter update, with the heartbeat's stamp (None: not checked)."""

    amphora_id: AmphoraId
    loadbalancer_id: LoadBalancerId
    stamp: HeartbeatStamp | None
    update: CounterUpdate


@dataclass
class PendingBatch:
    """Everything heard in one flush interval."""

    heard: dict[AmphoraId, tuple[LoadBalancerId, float]] = field(default_factory=dict)
    newest: dict[AmphoraId, HeartbeatStamp] = field(default_factory=dict)
    """The newest stamp heard per amphora (unstamped heartbeats leave no entry)."""
    counter_updates: list[StampedUpdate] = field(default_factory=list)
    carried: set[AmphoraId] = field(default_factory=set)
    """Amphorae whose time in ``heard`` is from an earlier flush interval (put back)."""
    skipped: dict[AmphoraId, int] = field(default_factory=dict)
    """How many flushes in a row found each amphora's row held by another transaction."""

    @property
    def loadbalancers(self) -> set[LoadBalancerId]:
        return {lb_id for lb_id, _ in self.heard.values()}

    @property
    def amphorae(self) -> set[AmphoraId]:
        return set(self.heard) | {update.amphora_id for update in self.counter_updates}

    def __bool__(self) -> bool:
        return bool(self.heard or self.counter_updates)


class PendingWrites:
    """Thread-safe accumulation of ``PendingBatch``es."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batch = PendingBatch()

    def hear(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        at: float,
        stamp: HeartbeatStamp | None = None,
    ) -> None:
        with self._lock:
            self._hear(amphora_id, loadbalancer_id, at)
            if stamp is not None:
                newest = self._batch.newest.get(amphora_id)
                if newest is None or newest < stamp:
                    self._batch.newest[amphora_id] = stamp

    def add_counter_update(self, update: StampedUpdate) -> None:
        with self._lock:
            self._batch.counter_updates.append(update)

    def take(self) -> PendingBatch:
        """Everything pending, leaving nothing behind."""
        with self._lock:
            batch, self._batch = self._batch, PendingBatch()
            return batch

    def restore_liveness(self, batch: PendingBatch) -> None:
        """Put back the liveness of a batch that could not be written (it is idempotent)."""
        with self._lock:
            self._put_back_liveness(batch, batch.heard.keys())

    def carry_over(self, batch: PendingBatch, amphorae: Collection[AmphoraId]) -> None:
        """Put back everything ``batch`` holds for ``amphorae``, whose rows another
        transaction held: liveness, stamps, and counter updates ahead of those that
        arrived since (they are older), each amphora counted as skipped once more."""
        if not amphorae:
            return
        held = set(amphorae)
        with self._lock:
            self._put_back_liveness(batch, held)
            for amphora_id in held:
                self._batch.skipped[amphora_id] = batch.skipped.get(amphora_id, 0) + 1
            carried = [u for u in batch.counter_updates if u.amphora_id in held]
            self._batch.counter_updates[:0] = carried

    def last_heard(self) -> dict[AmphoraId, float]:
        """The newest pending time of each amphora heard since the last flush."""
        with self._lock:
            return {amphora_id: at for amphora_id, (_, at) in self._batch.heard.items()}

    def _hear(self, amphora_id: AmphoraId, loadbalancer_id: LoadBalancerId, at: float) -> None:
        previous = self._batch.heard.get(amphora_id)
        if previous is None or previous[0] != loadbalancer_id or previous[1] < at:
            self._batch.heard[amphora_id] = (loadbalancer_id, at)
            self._batch.carried.discard(amphora_id)

    def _put_back_liveness(self, batch: PendingBatch, amphorae: Collection[AmphoraId]) -> None:
        """Liveness and newest stamps of ``amphorae`` from an earlier ``batch`` (lock held)."""
        pending = self._batch
        for amphora_id in amphorae:
            heard = batch.heard.get(amphora_id)
            if heard is not None and amphora_id not in pending.heard:  # else heard since
                pending.heard[amphora_id] = heard
                pending.carried.add(amphora_id)
            if (stamp := batch.newest.get(amphora_id)) is not None:
                newest = pending.newest.get(amphora_id)
                if newest is None or newest < stamp:
                    pending.newest[amphora_id] = stamp
