"""The spare pool's bookkeeping, on a fake slot maker: fill, claim, refill, failures, close."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lbaas.amphora.spare_slot import SpareSlot
from lbaas.amphora.spares import SparePool
from lbaas.host.base import HostOpsError
from tests.support.waiting import wait_until


class FakeSlots:
    """Slots that are names only; records what the pool asked for."""

    def __init__(self, leftovers: list[Path] | None = None) -> None:
        self.made: list[SpareSlot] = []
        self.claims: list[tuple[str, str]] = []
        self.discarded: list[str] = []
        self.prepare_error: Exception | None = None
        self.claim_error: Exception | None = None
        self._leftovers = leftovers or []
        self.prepared = threading.Event()

    def prepare(self) -> SpareSlot:
        if self.prepare_error is not None:
            raise self.prepare_error
        name = f"s{len(self.made)}"
        slot = SpareSlot(name, Path("/spares") / name, f"ns-{name}", 1000 + len(self.made))
        self.made.append(slot)
        self.prepared.set()
        return slot

    def claim(self, slot: SpareSlot, amphora_id: str) -> None:
        if self.claim_error is not None:
            raise self.claim_error
        self.claims.append((slot.name, amphora_id))

    def discard(self, directory: Path) -> None:
        self.discarded.append(directory.name)

    def leftovers(self) -> list[Path]:
        return list(self._leftovers)


def test_fill_prepares_up_to_the_size_and_no_more() -> None:
    slots = FakeSlots()
    pool = SparePool(slots, 2)
    assert pool.fill() == 2
    assert pool.fill() == 0
    assert pool.ready_count() == 2
    assert [s.name for s in pool.status().ready] == ["s0", "s1"]


def test_a_claim_takes_the_oldest_slot_and_counts_it() -> None:
    slots = FakeSlots()
    pool = SparePool(slots, 2)
    pool.fill()
    slot = pool.claim_for("amp-1")
    assert slot is not None and slot.name == "s0"
    assert slots.claims == [("s0", "amp-1")]
    assert pool.ready_count() == 1
    assert pool.status().taken == 1


def test_an_empty_pool_gives_nothing_and_the_amphora_is_built_without() -> None:
    pool = SparePool(FakeSlots(), 1)
    assert pool.claim_for("amp-1") is None
    assert pool.status().taken == 0


@pytest.mark.parametrize("error", [HostOpsError("rename refused"), OSError("link exists")])
def test_a_slot_that_cannot_be_handed_over_is_discarded(error: Exception) -> None:
    slots = FakeSlots()
    pool = SparePool(slots, 1)
    pool.fill()
    slots.claim_error = error
    assert pool.claim_for("amp-1") is None
    assert slots.discarded == ["s0"]
    assert pool.ready_count() == 0 and pool.status().taken == 0


def test_the_background_thread_refills_once_the_claimant_converged() -> None:
    slots = FakeSlots()
    pool = SparePool(slots, 2)
    pool.start()
    try:
        wait_until(lambda: pool.ready_count() == 2, 5, "the pool filled")
        pool.claim_for("amp-1")
        time.sleep(0.2)
        assert len(slots.made) == 2  # not while the amphora converges ...
        pool.refill_soon()  # ... but once it has (the registry says so)
        wait_until(lambda: len(slots.made) == 3, 5, "a third slot made")
        assert pool.ready_count() == 2
    finally:
        pool.close()
    assert sorted(slots.discarded) == ["s1", "s2"]  # the ready ones, not the claimed one
    assert pool.ready_count() == 0


def test_a_failed_refill_is_shown_and_retried() -> None:
    slots = FakeSlots()
    slots.prepare_error = HostOpsError("no namespace for you")
    pool = SparePool(slots, 1, retry_after=0.05)
    pool.start()
    try:
        wait_until(lambda: pool.status().last_error is not None, 5, "the error shown")
        assert pool.status().last_error == "no namespace for you"
        slots.prepare_error = None
        wait_until(lambda: pool.ready_count() == 1, 5, "the retry filled the pool")
        wait_until(lambda: pool.status().last_error is None, 5, "the error cleared")
    finally:
        pool.close()


def test_recover_discards_what_an_earlier_agent_left() -> None:
    slots = FakeSlots(leftovers=[Path("/spares/old1"), Path("/spares/old2")])
    pool = SparePool(slots, 1)
    assert pool.recover() == 2
    assert slots.discarded == ["old1", "old2"]
    assert pool.ready_count() == 0  # none adopted: refilled by the thread


def test_close_without_start_discards_the_ready_slots() -> None:
    slots = FakeSlots()
    pool = SparePool(slots, 2)
    pool.fill()
    pool.close()
    assert slots.discarded == ["s0", "s1"]
