"""The signed envelope and the replay guard, as the health manager relies on them."""

from __future__ import annotations

import pytest

from lbaas.errors import HeartbeatRejected
from lbaas.wire.heartbeat.envelope import Envelope, ReplayGuard, open_envelope, seal

KEY = b"k" * 32
NOW = 5_000.0


def sealed(
    sequence: int = 1, *, epoch: int = 100, sender: str = "host-1", sent_at: float = NOW
) -> bytes:
    return seal({"x": 1}, KEY, sender=sender, epoch=epoch, sequence=sequence, sent_at=sent_at)


def envelope(
    sequence: int = 1, *, epoch: int = 100, sender: str = "host-1", sent_at: float = NOW
) -> Envelope:
    return open_envelope(sealed(sequence, epoch=epoch, sender=sender, sent_at=sent_at), KEY)


def test_round_trip() -> None:
    assert envelope(7) == Envelope(
        sender="host-1", epoch=100, sequence=7, sent_at=NOW, payload={"x": 1}
    )


@pytest.mark.parametrize(
    "datagram",
    [
        seal({"x": 1}, b"other key", sender="h", epoch=1, sequence=1, sent_at=NOW),
        sealed()[:-1],
        sealed()[:-32],
        sealed()[:10] + b"X" + sealed()[11:],  # one byte of the body changed
        b"LBHB",
        b"",
        b"\x00" * 200,
    ],
    ids=["wrong key", "tag truncated", "no tag", "tampered", "magic only", "empty", "zeros"],
)
def test_anything_not_signed_with_the_key_is_rejected(datagram: bytes) -> None:
    with pytest.raises(HeartbeatRejected):
        open_envelope(datagram, KEY)


def test_oversized_payload_cannot_be_sealed() -> None:
    with pytest.raises(ValueError):
        seal({"x": "y" * 70_000}, KEY, sender="h", epoch=1, sequence=1)


def guard() -> ReplayGuard:
    return ReplayGuard(max_age=30.0, clock=lambda: NOW)


def test_each_sequence_is_accepted_once_and_in_order() -> None:
    replay = guard()
    replay.check(envelope(1))
    replay.check(envelope(2))
    for seen in (envelope(2), envelope(1)):
        with pytest.raises(HeartbeatRejected, match="replayed"):
            replay.check(seen)
    replay.check(envelope(10))


def test_a_new_epoch_starts_sequences_again() -> None:
    replay = guard()
    replay.check(envelope(50, epoch=100))
    replay.check(envelope(1, epoch=200))
    with pytest.raises(HeartbeatRejected):
        replay.check(envelope(99, epoch=100))


def test_senders_are_tracked_apart() -> None:
    replay = guard()
    replay.check(envelope(5, sender="host-1"))
    replay.check(envelope(1, sender="host-2"))


@pytest.mark.parametrize("skew", [-31.0, 31.0])
def test_too_old_or_too_new_is_stale(skew: float) -> None:
    with pytest.raises(HeartbeatRejected, match="stale"):
        guard().check(envelope(sent_at=NOW + skew))


def test_within_max_age_is_fresh() -> None:
    guard().check(envelope(sent_at=NOW - 29.0))
