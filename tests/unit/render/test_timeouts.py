"""Listener timeouts: 0 means unlimited, and a shared backend takes the longest."""

from __future__ import annotations

from lbaas.model.graph import ListenerTimeouts
from lbaas.render.haproxy.timeouts import (
    HAPROXY_MAX_TIMEOUT_MS,
    backend_timeouts_ms,
    client_timeout_ms,
    effective_timeout_ms,
    inspect_delay_ms,
)
from tests.support.graphs import listener


def test_zero_means_unlimited() -> None:
    assert effective_timeout_ms(0) == HAPROXY_MAX_TIMEOUT_MS
    assert effective_timeout_ms(1500) == 1500
    assert effective_timeout_ms(HAPROXY_MAX_TIMEOUT_MS + 1) == HAPROXY_MAX_TIMEOUT_MS


def test_frontend_timeouts() -> None:
    fast = listener("l", timeouts=ListenerTimeouts(client_data=1000, tcp_inspect=250))
    assert client_timeout_ms(fast) == 1000
    assert inspect_delay_ms(fast) == 250
    assert inspect_delay_ms(listener("default")) is None


def test_shared_backend_takes_the_longest_member_timeouts() -> None:
    users = (
        listener("a", timeouts=ListenerTimeouts(member_connect=1000, member_data=90000)),
        listener("b", timeouts=ListenerTimeouts(member_connect=4000, member_data=30000)),
    )
    assert backend_timeouts_ms(users) == (4000, 90000)


def test_an_unlimited_listener_makes_the_backend_unlimited() -> None:
    users = (
        listener("a"),
        listener("b", timeouts=ListenerTimeouts(member_connect=0, member_data=0)),
    )
    assert backend_timeouts_ms(users) == (HAPROXY_MAX_TIMEOUT_MS, HAPROXY_MAX_TIMEOUT_MS)


def test_no_listener_gets_octavias_defaults() -> None:
    assert backend_timeouts_ms(()) == (5000, 50000)
