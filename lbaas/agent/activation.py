"""The agent's listening socket handed over by a service manager (socket activation).

With systemd's socket activation the service manager binds and listens, and the agent
inherits the socket: ``LISTEN_FDS`` says how many descriptors were passed (from fd 3 on)
and ``LISTEN_PID`` names the process they are meant for. The socket then outlives any one
agent process: a converge sent while the agent restarts waits in the kernel's accept
backlog and is answered by the next agent, instead of being refused and retried later.

``inherited_socket`` is the agent's side; ``spawn_activated`` is the service manager's
side, for the benches and tests that play systemd's part on this host.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
from collections.abc import Mapping, MutableMapping, Sequence
from typing import IO

from lbaas.errors import ConfigError

log = logging.getLogger(__name__)

LISTEN_FDS_START = 3
_VARIABLES = ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")


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
    for name in _VARIABLES:
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


def spawn_activated(
    listening: socket.socket,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    output: IO[bytes] | int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with ``listening`` as its fd 3 and ``LISTEN_FDS``/``LISTEN_PID`` set,
    as systemd does. ``LISTEN_PID`` must be the program's own pid, known only after the
    fork: a shell sets it to its own (``$$``), moves the socket from stdin to fd 3 and
    execs the program in its place, so the pid stays the same."""
    script = 'export LISTEN_FDS=1 LISTEN_PID=$$; exec "$@" 3<&0 0</dev/null'
    return subprocess.Popen(
        ["/bin/sh", "-c", script, "sh", *argv],
        env={k: v for k, v in env.items() if k not in _VARIABLES},
        stdin=listening.fileno(),
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
