"""The agent's listening socket handed over by a service manager (socket activation).

With systemd's socket activation the service manager binds and listens, and the agent
inherits the socket: ``LISTEN_FDS`` says how many descriptors were passed (from fd 3 on)
and ``LISTEN_PID`` names the process they are meant for. The socket then outlives any one
agent process: a converge sent while the agent restarts waits in the kernel's accept
backlog and is answered by the next agent, instead of being refused and retried later.

``inherited_socket`` is the agent's side; the service manager's side, for the benches and
tests that play systemd's part on this host, is ``lbaas.host.socket_activation``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import MutableMapping

from lbaas.errors import ConfigError

log = logging.getLogger(__name__)

LISTEN_FDS_START = 3
VARIABLES = ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")


def inherited_socket(
    environ: MutableMapping[str, str] | None = None,
    pid: int | None = None,
    first_fd: int = LISTEN_FDS_START,
) -> socket.socket | None:
    """The listening TCP socket passed to this process, or None (bind one yourself).

    The variables are removed whatever they said, so that HAProxy and keepalived, started
    by the agent, never take the descriptors for their own. Passing more than one
    descriptor, or one that is not a listening TCP socket, is a configuration error.
    ``environ``, ``pid`` and ``first_fd`` are this process's unless given (tests).
    """
    env = os.environ if environ is None else environ
    count, owner = env.get("LISTEN_FDS"), env.get("LISTEN_PID")
    for name in VARIABLES:
        env.pop(name, None)
    if count is None:
        return None
    if owner is None or owner != str(os.getpid() if pid is None else pid):
        log.warning("LISTEN_FDS is meant for process %s, not this one: ignored", owner)
        return None
    if count != "1":
        raise ConfigError(f"the agent takes one listening socket, not LISTEN_FDS={count}")
    listening = socket.socket(fileno=first_fd)
    tcp = listening.family in (socket.AF_INET, socket.AF_INET6)
    if (
        not tcp
        or listening.type != socket.SOCK_STREAM
        or not listening.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    ):
        listening.detach()
        raise ConfigError(
            f"the agent's inherited descriptor {first_fd} is not a listening TCP socket"
        )
    # Nothing the agent starts (HAProxy, keepalived) may hold the API's socket.
    listening.set_inheritable(False)
    return listening
