"""Long-running children of the agent (HAProxy masters, keepalived): started and reaped.

Both run in the foreground as children of the agent, each in its own session (so a
signal to the agent's process group does not reach them and their own children share
their session id), their output appended to a private log file. ``Daemons`` keeps their
``Popen`` objects so that ``alive`` reaps one that exited: a zombie must never look
alive.

Their own children are the other half. keepalived forks its VRRP process; when the
keepalived parent dies (SIGKILL, a crash), that process is orphaned and reparented to
PID 1, and in a container or namespace whose PID 1 does not reap it stays a zombie for
ever — keeping its pid, which keepalived's pid files then name. So the agent makes
itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): orphans of its
descendants come to it instead, and a reaper thread collects the zombies among them
whose session is one of its daemons'. It reaps only those, by pid: a blanket
``waitpid(-1)`` would steal the exit status of commands ``subprocess.run`` is waiting
for (``haproxy -c`` would look successful).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from lbaas.host.commands import decode_output
from lbaas.private_files import FILE_MODE

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
#: How often the reaper looks for adopted zombies.
REAP_INTERVAL = 1.0


def open_private_log(path: Path) -> BinaryIO:
    """``path`` opened for appending, readable by its owner only (it quotes tenant config)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, "ab")


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(decode_output(path.read_bytes()).splitlines()[-lines:])
    except OSError:
        return ""


def become_subreaper() -> bool:
    """Make orphaned descendants this process's children; whether the kernel agreed."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first)."""
    try:
        # A process name (comm) may hold any bytes, even ")".
        return decode_output(Path(f"/proc/{pid}/stat").read_bytes()).rsplit(")", 1)[-1].split()
    except OSError:
        return None


def adopted_zombies(parent: int, sessions: set[int]) -> list[int]:
    """Zombie children of ``parent`` whose session is one of ``sessions``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # state, ppid, pgrp, session
        if fields and len(fields) > 3 and fields[0] == "Z" and fields[1] == str(parent):
            if int(fields[3]) in sessions:
                found.append(int(entry.name))
    return found


class Daemons:
    """Starts daemons in their own sessions and reaps them and their orphans."""

    def __init__(self, *, reap_interval: float = REAP_INTERVAL) -> None:
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._sessions: set[int] = set()
        self._lock = threading.Lock()
        self._interval = reap_interval
        self._reaper: threading.Thread | None = None
        self.reaped = 0
        """Orphans reaped since start (a VRRP process outliving its keepalived, ...)."""

    def spawn(self, argv: Sequence[str], log_file: Path, cwd: Path | None = None) -> int:
        """Start ``argv`` in a new session, output to ``log_file``; its pid. OSError."""
        with open_private_log(log_file) as out:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        with self._lock:
            self._children[proc.pid] = proc
            self._sessions.add(proc.pid)  # its session id is its pid
        self._start_reaper()
        return proc.pid

    def is_child(self, pid: int) -> bool:
        with self._lock:
            return pid in self._children

    def exit_code(self, pid: int) -> int | None:
        """The exit status of our child ``pid`` once it ended (reaping it), else None."""
        with self._lock:
            child = self._children.get(pid)
        if child is None or child.poll() is None:
            return None
        with self._lock:
            self._children.pop(pid, None)
        return child.returncode

    def alive(self, pid: int) -> bool | None:
        """Whether our child ``pid`` runs (an ended one is reaped); None: not our child."""
        with self._lock:
            child = self._children.get(pid)
        if child is None:
            return None
        if child.poll() is None:
            return True
        with self._lock:
            self._children.pop(pid, None)
        return False

    def wait(self, pid: int, timeout: float) -> None:
        """Reap our child ``pid``, waiting up to ``timeout`` (it was just killed)."""
        with self._lock:
            child = self._children.pop(pid, None)
        if child is not None:
            child.wait(timeout=timeout)

    def reap_orphans(self) -> list[int]:
        """Reap the zombies adopted from our daemons' sessions; their pids."""
        with self._lock:
            sessions, ours = set(self._sessions), set(self._children)
        reaped = []
        for pid in adopted_zombies(os.getpid(), sessions):
            if pid in ours:  # our own daemon: its Popen reaps it and keeps the status
                continue
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            reaped.append(pid)
        self.reaped += len(reaped)
        return reaped

    def _start_reaper(self) -> None:
        with self._lock:
            if self._reaper is not None:
                return
            self._reaper = threading.Thread(target=self._reap_loop, name="reaper", daemon=True)
        self._reaper.start()

    def _reap_loop(self) -> None:
        while True:
            threading.Event().wait(self._interval)
            try:  # the top of the reaper: a bad round must not end it
                for pid in self.reap_orphans():
                    log.info("reaped orphaned process %d of an agent daemon", pid)
            except Exception:  # noqa: BLE001 - logged; the next round tries again
                log.exception("reaping orphaned processes failed")


#: The agent's daemons: one registry, so one reaper, for HAProxy and keepalived.
DAEMONS = Daemons()
