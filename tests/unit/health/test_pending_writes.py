"""What a flush could not write because another health manager held the rows comes back.

``carry_over`` puts an amphora's facts back ahead of what arrived since: its counter
updates before the newer ones (folding is order-sensitive), its liveness only where
nothing newer was heard, and a count of the flushes in a row that skipped it.
"""

from __future__ import annotations

from lbaas.health.freshness import HeartbeatStamp
from lbaas.health.pending_writes import PendingWrites, StampedUpdate
from lbaas.model.graph import AmphoraId, LoadBalancerId

HELD, FREE = AmphoraId("amp-held"), AmphoraId("amp-free")
LB_ID = LoadBalancerId("lb-1")


def update(amphora_id: AmphoraId, sequence: int) -> StampedUpdate:
    return StampedUpdate(amphora_id, LB_ID, HeartbeatStamp(1, sequence), lambda current: {})


def test_carried_facts_go_back_ahead_of_newer_ones_and_count_the_skips() -> None:
    pending = PendingWrites()
    for amphora_id in (HELD, FREE):
        pending.hear(amphora_id, LB_ID, 10.0, HeartbeatStamp(1, 1))
        pending.add_counter_update(update(amphora_id, 1))
    batch = pending.take()
    pending.hear(FREE, LB_ID, 11.0, HeartbeatStamp(1, 2))  # arrived during the flush
    pending.add_counter_update(update(FREE, 2))

    pending.carry_over(batch, [HELD])
    again = pending.take()
    assert [(u.amphora_id, u.stamp) for u in again.counter_updates] == [
        (HELD, HeartbeatStamp(1, 1)),
        (FREE, HeartbeatStamp(1, 2)),
    ]
    assert again.heard == {HELD: (LB_ID, 10.0), FREE: (LB_ID, 11.0)}
    assert again.newest == {HELD: HeartbeatStamp(1, 1), FREE: HeartbeatStamp(1, 2)}
    assert again.carried == {HELD}  # its time is from the interval before
    assert again.skipped == {HELD: 1}

    pending.carry_over(again, [HELD])
    assert pending.take().skipped == {HELD: 2}  # skipped twice in a row


def test_a_carried_amphora_heard_again_keeps_the_newer_time() -> None:
    pending = PendingWrites()
    pending.hear(HELD, LB_ID, 10.0, HeartbeatStamp(1, 1))
    batch = pending.take()
    pending.hear(HELD, LB_ID, 11.0, HeartbeatStamp(1, 2))
    pending.carry_over(batch, [HELD])
    again = pending.take()
    assert again.heard == {HELD: (LB_ID, 11.0)}
    assert again.newest == {HELD: HeartbeatStamp(1, 2)}
    assert again.carried == set()  # heard in this interval: written with its own time

    pending.carry_over(again, [HELD])  # held once more, then heard again
    pending.hear(HELD, LB_ID, 12.0)
    assert pending.take().carried == set()
