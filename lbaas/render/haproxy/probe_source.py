"""The source port of the agent's VIP probes (``lbaas.amphora.vip_probe``), which every
rendered frontend rejects (``emit``): sent from the VIP itself, so no client can come from
there, and outside the kernel's ephemeral range.

A module of its own so that the agent learns it without importing the renderer (about a
tenth of the agent's start-up imports).
"""

import errno

VIP_PROBE_SOURCE_PORT = 61999


def answered_by_reset(exc: OSError, *, connected: bool) -> bool:
    """Whether a probe's connection that failed with ``exc`` was answered by a live
    process (the agent's VIP probe and the health manager's data-plane probe judge alike).

    A reset can only end a handshake that completed (a RST answering the SYN is "refused"):
    HAProxy rejecting the probe source's port, or closing an empty connection, resets it,
    and on a loaded machine that reset can land before a timed (non-blocking) ``connect``
    reads its outcome (``ECONNRESET``) or before the probe half-closes (``ENOTCONN``,
    ``connected``: the connect had returned)."""
    if isinstance(exc, ConnectionResetError):
        return True
    return connected and exc.errno == errno.ENOTCONN
