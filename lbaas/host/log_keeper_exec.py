"""Starting the access-log socket keeper (``lbaas.amphora.socket_keeper``) as the agent's
child in a session of its own, so a signal to the agent's process group (a Ctrl-C, a
service manager's stop) does not reach it: it must outlive the agent.

The agent holds its ``Popen`` in a thread that waits for it, so a keeper that exits
while the agent runs is reaped; one that outlives the agent goes to the subreaper or
PID 1, as an adopted HAProxy does.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from lbaas.host.daemons import open_private_log

KEEPER_MODULE = "lbaas.amphora.socket_keeper"


def keeper_argv(control: Path, *extra: str) -> list[str]:
    """The keeper's command line, with this interpreter (and this code: PYTHONPATH and
    the working directory are inherited)."""
    return [sys.executable, "-m", KEEPER_MODULE, "--control", str(control), *extra]


def start_keeper(control: Path, log_file: Path) -> int:
    """Start a keeper on ``control``, its output appended to ``log_file``; its pid."""
    with open_private_log(log_file) as log:
        process = subprocess.Popen(
            keeper_argv(control),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    threading.Thread(target=process.wait, name="log-keeper-reaper", daemon=True).start()
    return process.pid
