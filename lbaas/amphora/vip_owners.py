"""Who listens on a VIP:port: the amphora's HAProxy, or also something else.

Two processes can listen on one address and port when both set ``SO_REUSEPORT`` (HAProxy
does), and the kernel then splits new connections between them. That is what a HAProxy
left running by an earlier agent does to a new one on the same VIP (``lbaas serve`` stopped
with Ctrl-C leaves its HAProxies serving by design; a restart with an empty state directory
starts new ones beside them): part of the clients reach old backends or get 503s, while
everything the agent asks its own HAProxy looks well. Only the host can see it, so the
agent looks when ``lbaas diagnose`` asks (``lbaas.wire.amphora_diagnosis``).

How: the listening sockets bound to the VIP:port are read from ``/proc/<master>/net/tcp``
and ``tcp6`` (the tables of the network namespace the amphora's HAProxy runs in: the host's
in loopback mode, the amphora's own in netns mode), and each socket's inode is matched
against the ``socket:[inode]`` links under every readable ``/proc/<pid>/fd``. A socket held
by the master or one of its children (the current worker, old ones still draining) is the
amphora's; any other is foreign, named by pid and command line, or with no pid when its
owner's descriptors cannot be read (another user's process, to an agent that is not root).
A wildcard listener (0.0.0.0:port) is not counted: the kernel prefers the bound address.
"""

from __future__ import annotations

import ipaddress
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lbaas.wire.amphora_diagnosis import ListeningProcess

PROC = Path("/proc")
_LISTEN = "0A"
_COMMAND_CHARS = 300


def _address(hex_text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as ``/proc/net/tcp*`` writes it: 32-bit words in host byte order."""
    words = [int(hex_text[i : i + 8], 16) for i in range(0, len(hex_text), 8)]
    packed = b"".join(struct.pack("=I", word) for word in words)
    address = ipaddress.ip_address(packed)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def listening_inodes(net_dir: Path, address: str, port: int) -> set[int]:
    """The inodes of the TCP sockets listening on exactly ``address``:``port``."""
    wanted = ipaddress.ip_address(address)
    found = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (net_dir / table).read_text().splitlines()[1:]
        except OSError:
            continue  # no IPv6 in this kernel, or the namespace is gone
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            local, _, local_port = fields[1].partition(":")
            if int(local_port, 16) == port and _address(local) == wanted:
                found.add(int(fields[9]))
    return found


@dataclass(frozen=True)
class ProcessView:
    """One pass over ``/proc``: each readable process's parent, and who holds ``inodes``."""

    parents: dict[int, int]
    holders: dict[int, list[int]]

    @classmethod
    def read(cls, inodes: set[int], proc: Path = PROC) -> ProcessView:
        parents: dict[int, int] = {}
        holders: dict[int, list[int]] = {}
        for pid in _pids(proc):
            parent = _parent(proc, pid)
            if parent is not None:
                parents[pid] = parent
            for inode in _socket_inodes(proc, pid) & inodes:
                holders.setdefault(inode, []).append(pid)
        return cls(parents, holders)

    def family(self, master: int) -> set[int]:
        """``master`` and its children."""
        return {master} | {pid for pid, parent in self.parents.items() if parent == master}


def _pids(proc: Path) -> Iterator[int]:
    try:
        names = os.listdir(proc)
    except OSError:
        return
    yield from (int(name) for name in names if name.isdigit())


def _parent(proc: Path, pid: int) -> int | None:
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None  # gone meanwhile
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so cut at the last ")".
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def _socket_inodes(proc: Path, pid: int) -> set[int]:
    fd_dir = proc / str(pid) / "fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return set()  # not ours to read, or gone
    inodes = set()
    for name in names:
        try:
            target = os.readlink(fd_dir / name)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def command_line(pid: int, proc: Path = PROC) -> str:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")[:_COMMAND_CHARS]


def foreign_listeners(
    master: int | None, address: str, port: int, proc: Path = PROC
) -> tuple[set[int], list[ListeningProcess]]:
    """The amphora's HAProxy pids, and who else listens on ``address``:``port``.

    ``master`` None (HAProxy not running): the tables of the agent's own namespace are read.
    """
    net_dir = proc / (str(master) if master is not None else "self") / "net"
    inodes = listening_inodes(net_dir, address, port)
    view = ProcessView.read(inodes, proc)
    ours = view.family(master) if master is not None else set()
    foreign: list[ListeningProcess] = []
    for inode in sorted(inodes):
        pids = view.holders.get(inode, [])
        if not pids:
            foreign.append(ListeningProcess(pid=None, command=f"socket inode {inode}"))
        elif not ours.intersection(pids):
            foreign += [ListeningProcess(pid=p, command=command_line(p, proc)) for p in pids]
    return ours, _unique(foreign)


def _unique(found: list[ListeningProcess]) -> list[ListeningProcess]:
    seen: dict[tuple[int | None, str], ListeningProcess] = {}
    for item in found:
        seen.setdefault((item.pid, item.command), item)
    return list(seen.values())


__all__ = ["ListeningProcess", "command_line", "foreign_listeners", "listening_inodes"]
