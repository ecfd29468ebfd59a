"""How Octavia's listener timeouts become HAProxy timeouts.

Two mismatches are settled here. First, Octavia allows 0, meaning "no timeout", while
HAProxy treats a zero or missing client/connect/server timeout as a configuration mistake
and warns at every start; 0 is therefore written as HAProxy's largest timeout (about 24.8
days), which behaves the same without the warning. Second, the member timeouts are listener
attributes in Octavia but backend directives in HAProxy (``timeout connect`` and ``timeout
server`` cannot be set in a frontend), and one backend serves every listener that uses the
pool. A shared pool takes the longest value among its listeners, so no listener sees a
connection cut sooner than it asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from lbaas.model.graph import Listener, ListenerTimeouts

HAPROXY_MAX_TIMEOUT_MS = 2_147_483_647
"""The largest timer HAProxy accepts (2^31-1 ms)."""


def effective_timeout_ms(value_ms: int) -> int:
    """An Octavia timeout in ms as HAProxy should see it (0 = unlimited)."""
    if value_ms <= 0:
        return HAPROXY_MAX_TIMEOUT_MS
    return min(value_ms, HAPROXY_MAX_TIMEOUT_MS)


def client_timeout_ms(listener: Listener) -> int:
    """``timeout client`` of a listener's frontend."""
    return effective_timeout_ms(listener.timeouts.client_data)


def inspect_delay_ms(listener: Listener) -> int | None:
    """``tcp-request inspect-delay`` of a listener's frontend; None when not set (0)."""
    value = listener.timeouts.tcp_inspect
    return min(value, HAPROXY_MAX_TIMEOUT_MS) if value > 0 else None


def backend_timeouts_ms(users: Iterable[Listener]) -> tuple[int, int]:
    """(``timeout connect``, ``timeout server``) for a backend serving these listeners.

    A pool rendered without any listener (which the renderer does not do) would get
    Octavia's defaults.
    """
    timeouts = [listener.timeouts for listener in users] or [ListenerTimeouts()]
    connect = max(effective_timeout_ms(t.member_connect) for t in timeouts)
    server = max(effective_timeout_ms(t.member_data) for t in timeouts)
    return connect, server
