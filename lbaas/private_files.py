"""Files and directories readable by their owner only.

Rendered configurations carry tenant secrets' paths, member addresses and header rules; the
SQLite database holds every tenant's objects; logs name them too. None of it is for other
users of the host, so lbaas creates what it writes with mode 0600 (files) and 0700
(directories), whatever the process umask, and tightens a directory it finds wider.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def make_private_directory(path: Path) -> None:
    """Create ``path`` and any missing parents mode 0700; make ``path`` itself 0700."""
    if not path.parent.exists():
        make_private_directory(path.parent)
    path.mkdir(exist_ok=True, mode=DIRECTORY_MODE)
    if path.stat().st_mode & 0o777 != DIRECTORY_MODE:
        path.chmod(DIRECTORY_MODE)


def write_private(path: Path, text: str | bytes) -> None:
    """Replace ``path`` atomically with ``text`` (UTF-8), mode 0600 from the first byte."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # an older tmp file left by a crash keeps its own mode
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def create_private_once(path: Path, text: str | bytes) -> bool:
    """Create ``path`` with ``text``, mode 0600, unless it exists; whether this call made it.

    For a file several processes may create at once (two API processes starting on one
    state directory): the content is written under a name of this call's own, then linked
    to ``path``, which fails if another process linked first. So ``path`` never holds a
    half-written or a second writer's content, and the losers read the winner's file.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        _write_all(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        if fd >= 0:
            os.close(fd)
        os.unlink(tmp)
    return True


def create_private(path: Path) -> None:
    """Make sure ``path`` exists as a file of mode 0600 (created empty if missing)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
