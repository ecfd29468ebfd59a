"""``lbaas cleanup``: stop what a state directory's dead owner left running.

By design an agent's HAProxies (and keepalived, in netns mode), and its access-log socket
keeper, run in sessions of their own and outlive ``lbaas serve`` or ``lbaas agent``: a restart adopts them and drops no
connection. After a Ctrl-C or a SIGKILL that is meant to be final, they keep serving the
VIPs, and nothing else stops them. This command does, for one state directory.

It finds them the way the agent itself recognises its processes: an ``haproxy`` or
``keepalived`` whose command line names a file under the state directory (or under the
short link of its amphorae, ``lbaas.amphora.short_root``) (their
configuration, pid file and master socket all live there), which the pid files alone
would miss (a reloading master's old workers, a keepalived's VRRP child). It first takes
the state directory's lock, so it refuses while a live ``lbaas serve``/``lbaas agent``
owns the directory (stopping that one's HAProxies would be a failover, not a clean-up),
and no owner can start while it works. A separate command rather than ``serve --stop``:
it serves an ``lbaas agent``'s directory as well, and it never starts anything.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lbaas.amphora.short_root import link_for
from lbaas.host.log_keeper_exec import KEEPER_MODULE
from lbaas.state_directory import StateLock, missing_state

DAEMONS = ("haproxy", "keepalived")
#: The agent's access-log socket keeper (``lbaas.amphora.socket_keeper``): found by its
#: control socket in the amphorae's directory, on its command line.
KEEPER = "log-keeper"
NAMES = (*DAEMONS, KEEPER)
PID_FILES = ("haproxy.pid", "keepalived.pid", "keepalived-vrrp.pid")
_POLL = 0.05


@dataclass(frozen=True)
class LeftProcess:
    pid: int
    name: str


def cleanup(state_dir: Path, timeout: float = 10.0, say: Callable[[str], None] = print) -> int:
    """Stop every HAProxy and keepalived of ``state_dir``; 0 when none is left running."""
    if not state_dir.is_dir():
        raise missing_state(state_dir)
    lock = StateLock.acquire(state_dir, "lbaas cleanup")
    try:
        found = processes_of(state_dir)
        survivors = _stop(found, timeout)
        for pid_file in (p for name in PID_FILES for p in state_dir.rglob(name)):
            pid_file.unlink(missing_ok=True)
    finally:
        lock.release()
    if survivors:
        listed = ", ".join(f"{p.name} {p.pid}" for p in survivors)
        say(f"lbaas cleanup: these would not stop: {listed}")
        return 1
    if not found:
        say(f"nothing of {state_dir} was running")
        return 0
    listed = ", ".join(f"{p.name} {p.pid}" for p in found)
    say(f"stopped {len(found)} process(es) of {state_dir}: {listed}")
    return 0


def processes_of(state_dir: Path) -> list[LeftProcess]:
    """Live HAProxy and keepalived processes whose command line names a file under it."""
    roots = {str(state_dir.absolute()), str(state_dir.resolve())}
    # An agent whose state directory is too long runs its HAProxies through a short link.
    roots.add(str(link_for(state_dir.absolute() / "amphorae", os.geteuid(), os.environ)))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        name = KEEPER if KEEPER_MODULE in argv else Path(argv[0]).name
        if name in NAMES and _names_under(argv[1:], roots) and _running(int(entry.name)):
            found.append(LeftProcess(int(entry.name), name))
    return sorted(found, key=lambda p: p.pid)


def _names_under(args: list[str], roots: set[str]) -> bool:
    return any(arg == root or arg.startswith(root + "/") for arg in args for root in roots)


def _running(pid: int) -> bool:
    """Whether ``pid`` has not exited (a zombie, which no one may ever reap, has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _stop(found: list[LeftProcess], timeout: float) -> list[LeftProcess]:
    """SIGTERM (and SIGCONT, for a stopped one), then SIGKILL what outlives ``timeout``;
    what still runs after that."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in found if _running(p.pid)]
        for process in alive:
            _signal(process.pid, signum)
            _signal(process.pid, signal.SIGCONT)
        deadline = time.monotonic() + timeout
        while alive and time.monotonic() < deadline:
            time.sleep(_POLL)
            alive = [p for p in alive if _running(p.pid)]
        if not alive:
            return []
    return alive


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass
