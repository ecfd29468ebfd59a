"""Where lbaas keeps its state by default, who owns it, and whether there is any.

The default does not depend on the current directory: ``/var/lib/lbaas`` for root (the
FHS place for a service's state), ``$XDG_STATE_HOME/lbaas`` (``~/.local/state/lbaas``)
for anyone else, so ``lbaas diagnose`` run from another directory finds the state that
``lbaas serve`` made.

The processes that own a state directory (``lbaas serve`` and ``lbaas agent``, which run
its HAProxies) hold an ``flock`` on ``<state_dir>/lbaas.lock`` for their whole life: a
second one on the same directory is refused at once, naming the first, instead of two
agents fighting over the same HAProxies. The kernel drops the lock when its holder dies,
however it dies, so a SIGKILLed holder never leaves a stale lock behind; the descriptor
is close-on-exec, so the HAProxies, keepalived and the worker child that such a process
starts never inherit (and so never keep) it. The holder's pid and command are written
into the file only to name it in the refusal.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path

from lbaas.errors import CommandRefused

LOCK_FILE = "lbaas.lock"
DEFAULT_TEXT = "/var/lib/lbaas as root, else $XDG_STATE_HOME/lbaas (~/.local/state/lbaas)"
"""How ``--help`` and the configuration reference state the default."""


def default_state_dir(environ: Mapping[str, str], euid: int) -> Path:
    """``/var/lib/lbaas`` for root, else ``$XDG_STATE_HOME/lbaas`` or its fallback."""
    if euid == 0:
        return Path("/var/lib/lbaas")
    xdg = environ.get("XDG_STATE_HOME", "")
    # The XDG specification ignores a relative value, as it does an empty one.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "lbaas"
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".local" / "state" / "lbaas"


class StateLock:
    """An exclusive ``flock`` on a state directory, held until ``release`` or exit."""

    def __init__(self, state_dir: Path, descriptor: int) -> None:
        self.state_dir = state_dir
        self._descriptor: int | None = descriptor

    @classmethod
    def acquire(cls, state_dir: Path, command: str) -> StateLock:
        """Take the lock for ``command`` or raise CommandRefused naming its holder."""
        path = state_dir / LOCK_FILE
        # os.open's descriptors are close-on-exec: no child process inherits the lock.
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            raise CommandRefused(
                f"state directory {state_dir} is in use by {holder}: "
                "stop it first, or pass another --state-dir"
            ) from None
        except BaseException:
            os.close(descriptor)
            raise
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()} {command}\n".encode(), 0)
        return cls(state_dir, descriptor)

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # closing the last descriptor drops the flock
            self._descriptor = None


def _holder(descriptor: int) -> str:
    """``pid N (command)`` as its holder wrote it, or a neutral phrase while it writes."""
    try:
        pid, _, command = (
            os.pread(descriptor, 256, 0).decode(errors="replace").strip().partition(" ")
        )
    except OSError:
        return "another lbaas process"
    if not pid.isdigit():
        return "another lbaas process"
    return f"pid {pid} ({command})" if command else f"pid {pid}"


def missing_state(state_dir: Path) -> CommandRefused:
    """The error of a command that needs state which was never made."""
    return CommandRefused(
        f"no lbaas state at {state_dir}: start `lbaas serve` first or pass --state-dir"
    )


def require_sqlite_state(state_dir: Path, database_url: str) -> None:
    """Refuse a command that reads state when its SQLite database does not exist or holds
    no schema (a server database, such as PostgreSQL, is not checked here)."""
    if not database_url.startswith("sqlite:///"):
        return
    database_path = Path(database_url[len("sqlite:///") :].split("?", 1)[0])
    if not _has_schema(database_path):
        raise missing_state(state_dir)


def _has_schema(database_path: Path) -> bool:
    """Whether the file is a SQLite database lbaas has migrated; opened read-only, so
    asking never creates it."""
    if not database_path.is_file():
        return False
    try:
        with closing(
            sqlite3.connect(f"{database_path.absolute().as_uri()}?mode=ro", uri=True)
        ) as db:
            found = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
            ).fetchone()
    except sqlite3.Error:
        return False
    return found is not None
