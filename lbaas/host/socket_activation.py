"""The service manager's side of socket activation: start a program with a listening
socket as its fd 3 and ``LISTEN_FDS``/``LISTEN_PID`` set, as systemd does.

For the benches and tests that play systemd's part for ``lbaas agent`` on this host; the
agent's side is ``lbaas.host.activation``.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO

from lbaas.host.activation import VARIABLES


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
        env={k: v for k, v in env.items() if k not in VARIABLES},
        stdin=listening.fileno(),
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
