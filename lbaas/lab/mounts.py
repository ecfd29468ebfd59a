"""Each lab host's own mount namespace: hosts share the network and nothing else.

A network namespace alone lets every lab host open every file of the machine, so a lab
could work only because two "hosts" read the same file (issue 29: partitioned tier nodes
went on renewing their leases through one SQLite file). Each host therefore gets a
persistent mount namespace, bound as ``ip netns`` binds a network namespace, at
``/run/lbaas/lab-mnt/<namespace>``, and every process the lab starts on that host enters
both. Inside it:

* ``/tmp`` is a tmpfs of its own (mode 1777, as a host's /tmp is);
* each *hidden* tree (the lab state directory's ``labs/``, the access-log sockets' root,
  the lab databases' root) is covered by an empty tmpfs;
* the host's *own* directories are bound back at their usual paths, so settings the lab
  writes from outside and sockets the host creates are the same inodes on both sides;
* the machine's software that lives below ``/tmp`` (a clean clone checked there, its
  virtualenv: ``software_below_tmp``) is bound back read-only, or no lab process could
  start: every host runs the lab's own interpreter and code.

Modes matter on the way to an access-log socket: an agent runs as root but its HAProxy's
workers do not, and they connect to sockets below ``/run/lbaas/lab-access-log/<lab>/hN``.
Every directory on that way (``/run/lbaas``, the tmpfs covering the sockets' root, the
directories below it) is made 0755 here; the agent narrows ``hN`` itself to its HAProxy
group. (Made 0700, as the first version of this module did, the workers could not reach
their sockets, the health manager found the amphorae's data plane silent and failed them
over: twenty ACTIVE_STANDBY pairs took five times as long.)

Propagation: every mount is made private in the new namespace except ``/run/netns`` and
what lies below it, whose peers stay the machine's, so a namespace an agent adds for an
amphora (``ip netns add`` bind-mounts it there) is still seen by ``lab down`` and HAProxy.

Commands the operator runs (``lbaas lab exec``, ``db upgrade``, ``agent enrol``) are not a
host's processes: they enter the network namespace only, as an operator's shell would.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from lbaas.lab.base import HostFiles, LabError, Runner
from lbaas.private_files import make_private_directory

MOUNT_NAMESPACES = Path("/run/lbaas/lab-mnt")
_SHARED_WITH_MACHINE = Path("/run/netns")
_CROSSED_MODE = 0o755


def software_below_tmp(paths: Sequence[Path]) -> tuple[Path, ...]:
    """Which of ``paths`` (the interpreter's prefixes, the code's trees) a host's own
    ``/tmp`` would hide, as named and resolved (a virtualenv linked from below /tmp is
    reached through the link), without one lying inside another."""
    tmp = Path("/tmp")
    named = {Path(os.path.abspath(p)) for p in paths} | {p.resolve() for p in paths}
    below = {p for p in named if p.is_relative_to(tmp)}
    below.discard(tmp)
    return tuple(sorted(p for p in below if not any(p != o and p.is_relative_to(o) for o in below)))


def make_crossed_directory(path: Path) -> None:
    """Create ``path`` and the parents it lacks, each 0755 whatever the umask."""
    if not path.parent.exists():
        make_crossed_directory(path.parent)
    try:
        path.mkdir()
    except FileExistsError:
        return
    path.chmod(_CROSSED_MODE)


def enter_options(namespace: str, cwd: Path | None = None) -> list[str]:
    """``nsenter`` options entering ``namespace``'s host mount namespace, when it has one."""
    path = MOUNT_NAMESPACES / namespace
    if not _is_mount_point(path):
        return []
    # --wdns, not --wd: nsenter opens --wd's directory before entering the namespace, so
    # the process would work in the machine's mount, unreachable from its own root
    # (getcwd fails there: PostgreSQL, which asks for it, would not start).
    return [f"--mount={path}", f"--wdns={cwd or '/'}"]


def _mount_points() -> list[str]:
    """The mount points of this process's namespace (``/proc/self/mountinfo`` unescaped:
    octal escapes for space, tab, newline and backslash)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        raw = line.split()[4]
        points.append(raw.encode().decode("unicode_escape").encode("latin-1").decode())
    return points


def _is_mount_point(path: Path) -> bool:
    return str(path) in _mount_points()


def setup_script(files: HostFiles, points: Sequence[str], stage: Path) -> str:
    """The shell run inside a new host mount namespace (see the module's docstring).

    ``stage`` (the directory of the bound namespaces, covered in here only) holds the own
    directories while the hidden trees are covered, then they move to their places."""
    q = shlex.quote
    kept = (str(_SHARED_WITH_MACHINE), str(stage))
    # umask 022: the directories mkdir -p makes inside a covering tmpfs, on the way to an
    # own directory, must be crossable as the machine's are.
    lines = ["set -e", "umask 022"]
    for point in points:
        if not any(point == k or point.startswith(k + "/") for k in kept):
            lines.append(f"mount --make-private {q(point)}")
    lines.append(f"mount -t tmpfs -o mode=0700 lab-stage {q(str(stage))}")
    for index, own in enumerate(files.bound):
        lines.append(f"mkdir {q(str(stage / str(index)))}")
        lines.append(f"mount --bind {q(str(own))} {q(str(stage / str(index)))}")
    lines.append("mount -t tmpfs -o mode=1777 lab-tmp /tmp")
    for hidden in files.hidden:  # mkdir: a hidden tree below /tmp is gone with it
        lines.append(f"mkdir -p {q(str(hidden))}")
        lines.append(f"mount -t tmpfs -o mode=0755 lab-hidden {q(str(hidden))}")
    for index, own in enumerate(files.bound):
        lines.append(f"mkdir -p {q(str(own))}")
        lines.append(f"mount --move {q(str(stage / str(index)))} {q(str(own))}")
    for tree in files.software:
        lines.append(f"mount -o remount,bind,ro {q(str(tree))}")
    lines.append(f"umount {q(str(stage))}")
    return "\n".join(lines) + "\n"


class HostMounts:
    """Creates and removes the lab hosts' mount namespaces, bound below ``root``."""

    def __init__(self, run: Runner, root: Path = MOUNT_NAMESPACES) -> None:
        self._run = run
        self.root = root

    def _check(self, argv: Sequence[str]) -> None:
        done = self._run(argv)
        if done.returncode != 0:
            raise LabError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")

    def _private_root(self) -> None:
        """Make ``root`` a private mount, as ``ip netns`` makes /run/netns a shared one: a
        mount namespace may only be bound on a mount that does not propagate. Its parents
        (``/run/lbaas``, which the access-log sockets' root shares) stay crossable."""
        make_crossed_directory(self.root.parent)
        make_private_directory(self.root)
        if not _is_mount_point(self.root):
            self._check(["mount", "--bind", str(self.root), str(self.root)])
        self._check(["mount", "--make-private", str(self.root)])

    def create(self, namespace: str, files: HostFiles) -> None:
        """Give lab host ``namespace`` its mount namespace (replacing one left behind).

        What it binds and covers must exist first: a tree made later on the machine
        would be every host's (a hidden root) or none's (an own directory)."""
        self._private_root()
        self.remove(namespace)
        for own in files.own:  # first: they make the lab's state directories 0700
            make_private_directory(own)
        for path in (*files.crossed, *files.hidden):
            make_crossed_directory(path)
        path = self.root / namespace
        path.touch(mode=0o600)
        self._check(["unshare", f"--mount={path}", "--propagation", "unchanged", "true"])
        script = setup_script(files, _mount_points(), self.root)
        self._check(["nsenter", f"--mount={path}", "--", "sh", "-c", script])

    def remove(self, namespace: str) -> None:
        """Drop host ``namespace``'s mount namespace (it goes with its last process)."""
        path = self.root / namespace
        if _is_mount_point(path):
            self._check(["umount", str(path)])
        path.unlink(missing_ok=True)

    def names(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir()) if self.root.is_dir() else []
