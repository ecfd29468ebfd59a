"""Refusing an exact copy of a recent heartbeat on a set look-up, before its HMAC.

The replay guard (``lbaas.wire.heartbeat.envelope.ReplayGuard``) refuses a replayed
heartbeat only after its header is decoded from JSON, several times the cost of the HMAC.
Someone who captured genuine datagrams can replay them as fast as they can send; each
copy carries the HMAC tag of the original, and an HMAC-SHA256 tag names its datagram
(two different datagrams with one tag are a SHA-256 collision). So the tags of the
heartbeats this process accepted or refused as replays are kept, up to ``CAPACITY`` of
them, oldest forgotten first, and a datagram whose tag is among them is refused as a
replay unchecked. Only authenticated datagrams add tags, so a forger cannot make a genuine
heartbeat look seen: it would have to know the tag of a heartbeat not yet sent.
"""

from __future__ import annotations

from collections import deque

CAPACITY = 65536
"""Tags remembered: several intervals of heartbeats of a large fleet."""


class RecentTags:
    """Used by the receive thread alone (no lock)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._order: deque[bytes] = deque()
        self._tags: set[bytes] = set()
        self._capacity = capacity

    def __contains__(self, tag: bytes) -> bool:
        return tag in self._tags

    def add(self, tag: bytes) -> None:
        """Remember ``tag`` (of an authenticated datagram), forgetting the oldest if full."""
        if tag in self._tags:
            return
        if len(self._order) >= self._capacity:
            self._tags.discard(self._order.popleft())
        self._order.append(tag)
        self._tags.add(tag)
