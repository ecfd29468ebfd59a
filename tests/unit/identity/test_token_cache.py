"""The token cache: an answer lives min(token_cache_time, the token's expiry), refusals too."""

from __future__ import annotations

from datetime import UTC, datetime

from lbaas.identity.token_cache import TokenCache


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_an_answer_ends_with_the_cache_time_or_the_token() -> None:
    clock = Clock()
    cache: TokenCache[str] = TokenCache(300, 10, clock)
    expires = datetime.fromtimestamp(clock.now + 10, UTC)
    cache.put("short-lived", "alice", expires)
    cache.put("long-lived", "bob")
    assert cache.get("short-lived") == "alice"
    clock.now += 10
    assert cache.get("short-lived") is None  # expired tokens are asked about again
    assert cache.get("long-lived") == "bob"
    clock.now += 290
    assert cache.get("long-lived") is None


def test_no_cache_time_remembers_nothing_and_size_is_bounded() -> None:
    assert TokenCache[str](0, 10, Clock()).get("t") is None
    off: TokenCache[str] = TokenCache(0, 10, Clock())
    off.put("t", "alice")
    assert off.get("t") is None
    small: TokenCache[str] = TokenCache(300, 2, Clock())
    for token in ("a", "b", "c"):
        small.put(token, token.upper())
    assert [small.get(t) for t in ("a", "b", "c")] == [None, "B", "C"]
