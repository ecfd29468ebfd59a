"""The HAProxy processes of one amphora, found from its directory, for failure injection.

The agent runs each amphora's HAProxy in master-worker mode and writes the master's pid to
``<state_dir>/amphorae/<amphora id>/haproxy.pid``; the workers are the master's children.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.e2e.amphora.serve_process import process_alive


def master_pid(amphora_dir: Path) -> int | None:
    try:
        pid = int((amphora_dir / "haproxy.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if process_alive(pid) else None


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(pid) and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def haproxy_tree(amphora_dir: Path) -> list[int]:
    """The master's pid followed by its workers' pids (empty if no master runs)."""
    master = master_pid(amphora_dir)
    return [] if master is None else [master, *children_of(master)]


def signal_tree(amphora_dir: Path, signum: signal.Signals) -> list[int]:
    """Send ``signum`` to the master and every worker of the amphora; their pids."""
    pids = haproxy_tree(amphora_dir)
    assert pids, f"no HAProxy runs for {amphora_dir}"
    for pid in pids:
        os.kill(pid, signum)
    return pids
