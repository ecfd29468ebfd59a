"""Move the calling thread into a named network namespace (``ip netns`` names).

Linux keeps the network namespace per thread, and a socket belongs for life to the
namespace of the thread that created it. So a thread that enters an amphora's namespace
first and then creates every socket itself (the L4 health checker's event loop does)
probes the members through the amphora's legs while the rest of the agent stays where it
is. Python 3.11 has no ``os.setns``; libc's ``setns(2)`` through ctypes does the same
(``os.setns`` is used where it exists). Needs root (CAP_SYS_ADMIN), as netns mode does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

#: Where ``ip netns add`` bind-mounts its namespaces.
NETNS_RUN_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000


def enter_network_namespace(name: str, run_dir: Path = NETNS_RUN_DIR) -> None:
    """Move the calling thread (only it) into network namespace ``name``; OSError if not."""
    fd = os.open(run_dir / name, os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns = getattr(os, "setns", None)
        if setns is not None:  # Python 3.12 and later
            setns(fd, CLONE_NEWNET)
            return
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into network namespace {name}: {os.strerror(errno)}")
    finally:
        os.close(fd)
