"""The source throttle (fake clock) and the kernel filter it feeds (real sockets)."""

from __future__ import annotations

import socket

from lbaas.health.kernel_filter import drop_sources
from lbaas.health.source_throttle import SourceThrottle

FLOODER = ("192.0.2.7", 4000)
AGENT = ("192.0.2.8", 5000)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_source_is_blocked_past_its_burst_and_released_after_the_penalty() -> None:
    clock = Clock()
    throttle = SourceThrottle(rate=10, burst=5, penalty=2.0, clock=clock)
    for _ in range(5):
        throttle.failed(FLOODER)
    assert not throttle.blocked(FLOODER)  # within the burst
    throttle.failed(FLOODER)
    assert throttle.blocked(FLOODER) and throttle.blocks == 1
    assert not throttle.blocked(AGENT)  # other sources are not touched
    assert throttle.blocked_sources() == ([FLOODER], 102.0)
    clock.now += 2.0
    assert not throttle.blocked(FLOODER)
    assert throttle.blocked_sources() == ([], float("inf"))


def test_failures_at_the_allowed_rate_never_block() -> None:
    clock = Clock()
    throttle = SourceThrottle(rate=10, burst=5, penalty=2.0, clock=clock)
    for _ in range(200):
        clock.now += 0.1
        throttle.failed(FLOODER)
    assert not throttle.blocked(FLOODER) and throttle.blocks == 0


def test_the_kernel_filter_drops_blocked_sources_only() -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as blocked,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other,
    ):
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(2.0)
        blocked.bind(("127.0.0.1", 0))
        other.bind(("127.0.0.1", 0))
        assert drop_sources(receiver, [blocked.getsockname()]) == 1
        blocked.sendto(b"forged", receiver.getsockname())
        other.sendto(b"genuine", receiver.getsockname())
        assert receiver.recvfrom(100) == (b"genuine", other.getsockname())
        assert drop_sources(receiver, []) == 0  # detached: everyone gets through again
        blocked.sendto(b"again", receiver.getsockname())
        assert receiver.recvfrom(100) == (b"again", blocked.getsockname())
