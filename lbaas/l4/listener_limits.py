"""A listener's connection limit and timeouts in the kernel's terms (both kernel providers).

The kernel has one idle timer per flow (its conntrack entry's, refreshed by a packet either
way), where HAProxy has one per side: an idle stream ends at the shorter of the two, so the
flow's timeout is the shorter of ``timeout_client_data`` and ``timeout_member_data``. It
is used for UDP only: forgetting a TCP flow does not end the connection. Octavia's 0 is
"no timeout": the longest the API takes (24 days, within the ~24.8 days conntrack can
hold). Conntrack counts whole seconds; the API refuses other values on kernel listeners,
and a value that reaches here anyway is rounded up, never cut short.
"""

from __future__ import annotations

from lbaas.model.graph import ListenerTimeouts

#: Octavia's largest timeout (2073600000 ms) in seconds.
LONGEST_IDLE_TIMEOUT = 2_073_600


def _seconds(value_ms: int) -> int:
    return (
        LONGEST_IDLE_TIMEOUT if value_ms <= 0 else min(-(-value_ms // 1000), LONGEST_IDLE_TIMEOUT)
    )


def idle_timeout(timeouts: ListenerTimeouts) -> int:
    """Seconds a UDP flow of the listener may stay idle before the kernel forgets it."""
    return min(_seconds(timeouts.client_data), _seconds(timeouts.member_data))


def connection_limit(value: int) -> int | None:
    """Octavia's connection_limit for the kernel: -1 and 0 are no limit (None), as the
    amphora's HAProxy frontends take them."""
    return value if value > 0 else None
