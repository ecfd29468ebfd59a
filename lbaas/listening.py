"""Binding the addresses a process serves on, with an error an operator can act on.

A port another process holds is the commonest first-start failure. ``bind``'s bare
``OSError: [Errno 98] Address already in use`` names neither the address nor the
setting that chose it, and surfaced as a traceback (or, for the API, after "listening"
was already printed). Each server socket is therefore bound before the process starts
anything else, and a refusal names the address and the setting to change.
"""

from __future__ import annotations

import errno
import socket

from lbaas.config import Settings
from lbaas.errors import CommandRefused


def address_refused(what: str, host: str, port: int, setting: str, exc: OSError) -> CommandRefused:
    """The one-line error for a bind of ``what`` on ``host:port`` that failed."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        reason = "is in use by another process"
    elif exc.errno == errno.EADDRNOTAVAIL:
        reason = "is not an address of this host"
    elif exc.errno == errno.EACCES:
        reason = "needs privileges this process lacks"
    else:
        reason = f"cannot be bound ({exc.strerror or exc})"
    return CommandRefused(f"{what} address {where} {reason}: change {setting}")


def listen_tcp(host: str, port: int, what: str, setting: str) -> socket.socket:
    """A listening TCP socket on ``host:port`` (SO_REUSEADDR, as servers set it), or
    CommandRefused naming the address. Not inherited by child processes."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise address_refused(what, host, port, setting, exc) from None
    return sock


def bind_api(settings: Settings) -> socket.socket:
    """The API's socket, bound before anything starts: a taken port stops start-up here."""
    return listen_tcp(settings.api.host, settings.api.port, "API", "api.port or --port")


def bind_agent(settings: Settings) -> socket.socket:
    """The agent's HTTPS socket."""
    return listen_tcp(settings.agent.host, settings.agent.port, "agent", "agent.host/agent.port")


def bind_embedded_agent(settings: Settings) -> socket.socket | None:
    """``serve``'s embedded agent's socket (amphora provider only), bound before anything
    starts."""
    if "amphora" not in settings.providers.enabled:
        return None
    return bind_agent(settings)


RECEIVE_BUFFER = 64 * 1024 * 1024
"""Bytes asked of the kernel for the heartbeat socket's receive queue (forced if the
process may, else capped at ``net.core.rmem_max``): some 0.4 s of a 100,000/s flood of
small datagrams, so a receive thread the scheduler holds off for a moment loses none."""
_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def bind_heartbeats(host: str, port: int) -> socket.socket:
    """The heartbeat receiver's UDP socket, its receive queue grown."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, RECEIVE_BUFFER)
        except OSError:  # not CAP_NET_ADMIN: the kernel caps the request at rmem_max
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise address_refused("heartbeat", host, port, "health.bind_host/bind_port", exc) from None
    return sock


def bind_embedded_heartbeats(settings: Settings) -> socket.socket | None:
    """``serve``'s embedded health manager's socket (a provider of agents enabled), bound
    before anything starts."""
    if not {"amphora", "distributed"} & set(settings.providers.enabled):
        return None
    return bind_heartbeats(settings.health.bind_host, settings.health.bind_port)
