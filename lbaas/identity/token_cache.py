"""Tokens Keystone already answered for, so a validated token costs no round trip.

keystonemiddleware remembers each answer for ``token_cache_time`` seconds; so does this,
and never past the token's own expiry. Refusals are remembered too (a client retrying a
bad token must not turn into a stream of requests to Keystone). The price, the same as
keystonemiddleware's: a token revoked in Keystone is still accepted until its entry ends,
at most ``token_cache_time`` later. Entries are keyed by the token's SHA-256, so the cache
never holds a usable token, and the oldest entries go first when it is full.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

Answer = TypeVar("Answer")


def token_key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class _Entry(Generic[Answer]):
    answer: Answer
    until: float


class TokenCache(Generic[Answer]):
    """Answers by token, each until min(now + ttl, the token's expiry)."""

    def __init__(self, ttl: float, size: int, clock: Callable[[], float]) -> None:
        self._ttl, self._size, self._clock = ttl, size, clock
        self._entries: OrderedDict[str, _Entry[Answer]] = OrderedDict()

    def get(self, token: str) -> Answer | None:
        key = token_key(token)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() >= entry.until:
            del self._entries[key]
            return None
        return entry.answer

    def put(self, token: str, answer: Answer, expires: datetime | None = None) -> None:
        if self._ttl <= 0:
            return
        until = self._clock() + self._ttl
        if expires is not None:
            until = min(until, expires.timestamp())
        key = token_key(token)
        self._entries.pop(key, None)
        self._entries[key] = _Entry(answer, until)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
