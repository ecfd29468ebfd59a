"""Losing a lab host at one instant: freeze its processes, cut its links, kill them.

A host that dies (power, kernel panic) says nothing on the way out: no TCP FIN, no BGP
notification, no VRRP priority 0, no last heartbeat. Killing its processes one by one
while its links are up lets each of them say goodbye (a SIGKILLed BIRD's sessions are
closed by its kernel, and the router withdraws the node at once), and the ones still
running serve for a while. So ``host-down`` does it the way a real loss looks from the
outside, in three steps taken back to back once every process is found:

1. freeze: SIGSTOP to each of them, so none sends anything more, then a second look for
   a process forked between the first look and the freeze (it is frozen too);
2. cut: every bridge-side port of the host down in one ``ip -batch`` (one process, one
   netlink socket), while no process of the host can run;
3. kill: SIGKILL to each; a stopped process dies of it as any other.

The processes of a host are the ones registered for it (its agent, its tier node's BIRD,
wherever they run) and every process whose network namespace is the host's or one of its
amphorae's or instances' (the inode of ``/proc/<pid>/ns/net``, as ``ip netns pids``
compares). Finding them takes a scan of /proc and is done before the clock starts; the
measured instant is from the first SIGSTOP to the last SIGKILL sent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lbaas.lab.base import LabError, Runner

NETNS_DIR = Path("/run/netns")


@dataclass(frozen=True)
class HostLoss:
    """What ``host-down`` did, timed with the monotonic clock."""

    processes: int
    """Processes frozen and killed."""
    links: int
    """Bridge-side ports taken down."""
    freeze_ms: float
    """From the first SIGSTOP until every process found was stopped."""
    cut_ms: float
    """From the first SIGSTOP until the links were down."""
    instant_ms: float
    """From the first SIGSTOP until the last SIGKILL was sent: the loss itself."""
    gone_ms: float
    """From the first SIGSTOP until no killed process was running."""

    def figures(self) -> dict[str, float | int]:
        return {
            "processes": self.processes,
            "links": self.links,
            "freeze_ms": round(self.freeze_ms, 1),
            "cut_ms": round(self.cut_ms, 1),
            "instant_ms": round(self.instant_ms, 1),
            "gone_ms": round(self.gone_ms, 1),
        }


def namespace_inodes(namespaces: Iterable[str]) -> set[int]:
    """The network-namespace inodes of the named namespaces that exist."""
    found = set()
    for name in namespaces:
        with contextlib.suppress(OSError):
            found.add(os.stat(NETNS_DIR / name).st_ino)
    return found


def pids_in(inodes: set[int]) -> set[int]:
    """Every process whose network namespace is one of ``inodes`` (this one excepted)."""
    mine = os.getpid()
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == mine:
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry.name}/ns/net").st_ino in inodes:
                found.add(int(entry.name))
    return found


def _signal(pids: Iterable[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def lose_host(
    run: Runner,
    fabric: str,
    ports: Sequence[str],
    registered: Iterable[int],
    namespaces: Iterable[str],
    running: Callable[[int], bool],
    exit_wait: float = 5.0,
) -> HostLoss:
    """Freeze every process of the host, take ``ports`` (in ``fabric``) down, kill them."""
    inodes = namespace_inodes(namespaces)
    pids = set(registered) | pids_in(inodes)
    with tempfile.NamedTemporaryFile("w", prefix="host-down-", suffix=".ip") as batch:
        batch.write("".join(f"link set dev {port} down\n" for port in ports))
        batch.flush()
        start = time.monotonic()
        _signal(pids, signal.SIGSTOP)
        late = pids_in(inodes) - pids  # forked between the first look and the freeze
        _signal(late, signal.SIGSTOP)
        pids |= late
        frozen = time.monotonic()
        done = run(["ip", "-n", fabric, "-batch", batch.name])
        cut = time.monotonic()
        _signal(pids, signal.SIGKILL)
        killed = time.monotonic()
    if done.returncode != 0:
        raise LabError(f"cutting the host's links failed: {done.stderr.strip()}")
    deadline = killed + exit_wait
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    gone = time.monotonic()
    return HostLoss(
        processes=len(pids),
        links=len(ports),
        freeze_ms=(frozen - start) * 1000,
        cut_ms=(cut - start) * 1000,
        instant_ms=(killed - start) * 1000,
        gone_ms=(gone - start) * 1000,
    )
