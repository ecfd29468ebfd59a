"""Signed heartbeat envelopes: JSON payload, sequence, time and an HMAC-SHA256 tag.

Agents send one UDP datagram per amphora per interval; the health manager must be able to
trust it without a connection. The envelope is ``MAGIC | version | JSON header+payload |
32-byte HMAC over everything before it``. The header carries the sender's id, a start-up
``epoch`` (the sender's start time in nanoseconds, so a restart moves it forward) and a ``sequence`` that grows with every datagram of that epoch, plus the send
time. ``ReplayGuard`` refuses a (sender, epoch, sequence) it has already accepted or one
that is older, and anything sent too long ago, so a captured datagram cannot be replayed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lbaas.errors import HeartbeatLate, HeartbeatRejected

MAGIC = b"LBHB"
VERSION = 1
_TAG_LEN = hashlib.sha256().digest_size
MAX_DATAGRAM = 65000


@dataclass(frozen=True)
class Envelope:
    sender: str
    epoch: int
    sequence: int
    sent_at: float
    payload: Mapping[str, Any]


def seal(
    payload: Mapping[str, Any],
    key: bytes,
    *,
    sender: str,
    epoch: int,
    sequence: int,
    sent_at: float | None = None,
) -> bytes:
    """Serialise and sign one heartbeat."""
    body = json.dumps(
        {
            "sender": sender,
            "epoch": epoch,
            "seq": sequence,
            "sent_at": time.time() if sent_at is None else sent_at,
            "payload": payload,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    head = MAGIC + bytes([VERSION]) + body
    datagram = head + hmac.new(key, head, hashlib.sha256).digest()
    if len(datagram) > MAX_DATAGRAM:
        raise ValueError(f"heartbeat of {len(datagram)} bytes does not fit a datagram")
    return datagram


_MIN_DATAGRAM = len(MAGIC) + 1 + _TAG_LEN


def authentic(datagram: bytes, key: bytes) -> bool:
    """Whether ``datagram`` is a heartbeat signed with ``key``: size, magic, then the HMAC.

    The cheapest possible refusal, run on every datagram before anything is parsed, so
    that a flood of forged datagrams costs one hash each and nothing else.
    """
    if not _MIN_DATAGRAM <= len(datagram) <= MAX_DATAGRAM or not datagram.startswith(MAGIC):
        return False
    head, tag = datagram[:-_TAG_LEN], datagram[-_TAG_LEN:]
    return hmac.compare_digest(tag, hmac.digest(key, head, "sha256"))


def open_envelope(datagram: bytes, key: bytes) -> Envelope:
    """Check the signature and decode; raises HeartbeatRejected on anything wrong."""
    if not authentic(datagram, key):
        raise HeartbeatRejected("not a heartbeat signed with our key")
    return decode(datagram)


def decode(datagram: bytes) -> Envelope:
    """Decode a datagram that ``authentic`` accepted; raises HeartbeatRejected."""
    head = datagram[:-_TAG_LEN]
    if head[len(MAGIC)] != VERSION:
        raise HeartbeatRejected(f"unsupported heartbeat version {head[len(MAGIC)]}")
    try:
        doc = json.loads(head[len(MAGIC) + 1 :])
        return Envelope(
            sender=str(doc["sender"]),
            epoch=int(doc["epoch"]),
            sequence=int(doc["seq"]),
            sent_at=float(doc["sent_at"]),
            payload=dict(doc["payload"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise HeartbeatRejected(f"malformed heartbeat: {exc}") from exc


class ReplayGuard:
    """Accepts each (sender, epoch, sequence) once, in increasing order, while fresh."""

    def __init__(self, max_age: float = 30.0, clock: Callable[[], float] = time.time) -> None:
        self._max_age = max_age
        self._clock = clock
        self._last: dict[str, tuple[int, int]] = {}

    def check(self, envelope: Envelope) -> None:
        """Raise HeartbeatRejected for a replayed, reordered or stale envelope."""
        now = self._clock()
        if abs(now - envelope.sent_at) > self._max_age:
            raise HeartbeatLate(f"heartbeat from {envelope.sender} is stale")
        seen = self._last.get(envelope.sender)
        if seen is not None and (envelope.epoch, envelope.sequence) <= seen:
            raise HeartbeatRejected(
                f"replayed heartbeat from {envelope.sender} (sequence {envelope.sequence})"
            )
        self._last[envelope.sender] = (envelope.epoch, envelope.sequence)
