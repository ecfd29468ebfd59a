"""Each lab host's own mount namespace: hosts share the network and nothing else.

A network namespace alone lets every lab host open every file of the machine, so a lab
could work only because two "hosts" read the same file (issue 29: partitioned tier nodes
went on renewing their leases through one SQLite file). Each host therefore gets a
persistent mount namespace, bound like ``ip netns`` binds a network namespace, at
``/run/lbaas/lab-mnt/<namespace>``, and every process the lab starts on that host enters
both. Inside it:

* ``/tmp`` is a tmpfs of its own;
* each *hidden* tree (the lab state directory's ``labs/``, the access-log sockets' root)
  is covered by an empty tmpfs;
* the host's *own* directories are bound back at their usual paths, so settings the lab
  writes from outside and sockets the host creates are the same inodes on both sides.

Propagation: every mount is made private in the new namespace except ``/run/netns`` and
what lies below it, whose peers stay the machine's, so a namespace an agent adds for an
amphora (``ip netns add`` bind-mounts it there) is still seen by ``lab down`` and HAProxy.

Commands the operator runs (``lbaas lab exec``, ``db upgrade``, ``agent enrol``) are not a
host's processes: they enter the network namespace only, as an operator's shell would.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lbaas.lab.base import LabError, Runner
from lbaas.private_files import make_private_directory

MOUNT_NAMESPACES = Path("/run/lbaas/lab-mnt")
_SHARED_WITH_MACHINE = Path("/run/netns")


@dataclass(frozen=True)
class HostFiles:
    """What one host sees of the machine's files besides the system's own."""

    own: tuple[Path, ...]  # bound back at their paths (created when missing)
    hidden: tuple[Path, ...]  # covered by an empty tmpfs (``/tmp`` always is)


def enter_options(namespace: str, cwd: Path | None = None) -> list[str]:
    """``nsenter`` options entering ``namespace``'s host mount namespace, when it has one."""
    path = MOUNT_NAMESPACES / namespace
    if not _is_mount_point(path):
        return []
    return [f"--mount={path}", f"--wd={cwd or '/'}"]


def _mount_points() -> list[str]:
    """The mount points of this process's namespace (``/proc/self/mountinfo`` unescaped)."""
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
    lines = ["set -e"]
    for point in points:
        if not any(point == k or point.startswith(k + "/") for k in kept):
            lines.append(f"mount --make-private {q(point)}")
    lines.append(f"mount -t tmpfs -o mode=0700 lab-stage {q(str(stage))}")
    for index, own in enumerate(files.own):
        lines.append(f"mkdir {q(str(stage / str(index)))}")
        lines.append(f"mount --bind {q(str(own))} {q(str(stage / str(index)))}")
    for hidden in (Path("/tmp"), *files.hidden):
        lines.append(f"mkdir -p {q(str(hidden))}")
        lines.append(f"mount -t tmpfs -o mode=0700 lab-hidden {q(str(hidden))}")
    for index, own in enumerate(files.own):
        lines.append(f"mkdir -p {q(str(own))}")
        lines.append(f"mount --move {q(str(stage / str(index)))} {q(str(own))}")
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
        mount namespace may only be bound on a mount that does not propagate."""
        make_private_directory(self.root)
        if not _is_mount_point(self.root):
            self._check(["mount", "--bind", str(self.root), str(self.root)])
        self._check(["mount", "--make-private", str(self.root)])

    def create(self, namespace: str, files: HostFiles) -> None:
        """Give lab host ``namespace`` its mount namespace (replacing one left behind)."""
        self._private_root()
        self.remove(namespace)
        for own in files.own:
            make_private_directory(own)
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
