"""Access-log sockets kept listening while no agent reads them.

HAProxy 2.6's ring forwarder connects again at once when its connect is refused: some 380
failed connects a second per HAProxy worker for as long as the agent that owns the socket
is away. Across an agent's (or ``lbaas serve``'s) restart every amphora's HAProxy spun
so: 50 amphorae took a 2-core host to a load average of 70 in ``bench/scale.py``'s
resync, slowing the very start-up they waited for. So a starting agent first listens
again on every socket of its directory that nothing listens on. HAProxy's forwarder
connects, writes into the socket's buffer and then waits, the rest kept in its ring. The
agent's readers take these listeners over as they adopt their amphorae, so the lines
queued meanwhile are read, not lost; what no amphora claimed once adoption is done is
closed and removed, as the stale sockets of deleted amphorae always were.

Only the sockets of this agent's own amphorae (the directories of its amphora root) that
refuse are held: another agent sharing the directory (``serve`` and a node agent on one
host, or tests side by side) keeps its own, and a restarting one's lines never wait in a
listener this agent would later close.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path

log = logging.getLogger(__name__)

#: Connections queued per held socket (one per HAProxy worker, old ones after reloads).
BACKLOG = 16


def refuses(path: Path) -> bool:
    """Whether connecting to the UNIX socket at ``path`` is refused (nothing listens)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            return True
        except OSError as exc:  # not ours to judge (permissions, a race): left alone
            log.debug("access-log socket %s left alone: %s", path, exc)
    return False


def listen_in_place(
    path: Path,
    *,
    keep_owner_of: Path | None = None,
    kind: socket.SocketKind = socket.SOCK_STREAM,
    mode: int | None = None,
) -> socket.socket:
    """A socket listening at ``path``, bound under a private name and renamed over it, so
    whoever connects to ``path`` never finds one that does not listen yet; with
    ``keep_owner_of``, that file's group and mode (HAProxy's group) are kept, with
    ``mode`` that mode. The private name is no longer than the path's (a UNIX socket path
    has at most 107 bytes). ``kind``: a stream socket unless said otherwise."""
    fresh = path.with_name(f".{path.stem}.new")
    fresh.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, kind)
    try:
        listener.bind(str(fresh))
        if mode is not None:
            fresh.chmod(mode)
        listener.listen(BACKLOG)
        if keep_owner_of is not None:
            was = keep_owner_of.stat()
            os.chown(fresh, -1, was.st_gid)
            fresh.chmod(was.st_mode & 0o777)
        fresh.rename(path)
    except OSError:
        listener.close()
        fresh.unlink(missing_ok=True)
        raise
    return listener


def owned_amphorae(amphora_root: Path) -> set[str]:
    """The ids of the amphorae an agent left in ``amphora_root`` (a directory each; the
    spares' directory starts with a dot)."""
    if not amphora_root.is_dir():
        return set()
    return {d.name for d in amphora_root.iterdir() if d.is_dir() and not d.name.startswith(".")}


class HeldLogSockets:
    """Listeners held for the amphorae an agent is about to adopt, by socket path."""

    def __init__(self, held: dict[Path, tuple[socket.socket, int]] | None = None) -> None:
        self._held = dict(held or {})  # path -> (listener, the inode it was renamed to)
        self._lock = threading.Lock()

    @classmethod
    def hold_stale(cls, directory: Path, amphora_root: Path) -> HeldLogSockets:
        """Listen again on the sockets of ``directory`` that nothing listens on and that
        belong to an amphora of ``amphora_root``."""
        held: dict[Path, tuple[socket.socket, int]] = {}
        owned = owned_amphorae(amphora_root)
        if directory.is_dir():
            for path in sorted(directory.glob("*.sock")):
                if path.stem not in owned or not path.is_socket() or not refuses(path):
                    continue
                try:
                    listener = listen_in_place(path, keep_owner_of=path)
                except OSError as exc:
                    log.warning("access-log socket %s not held: %s", path, exc)
                    continue
                held[path] = (listener, path.stat().st_ino)
        if held:
            log.info("holding %d access-log sockets until their amphorae are adopted", len(held))
        return cls(held)

    def add(self, path: Path, listener: socket.socket) -> None:
        """Hold ``listener`` (one a socket keeper kept) for the amphora of ``path``."""
        inode = path.stat().st_ino
        with self._lock:
            old = self._held.pop(path, None)
            self._held[path] = (listener, inode)
        if old is not None:
            old[0].close()

    def take(self, path: Path) -> socket.socket | None:
        """The listener held at ``path`` (the caller's from now on), or None."""
        with self._lock:
            entry = self._held.pop(path, None)
        return None if entry is None else entry[0]

    def release(self) -> list[Path]:
        """Close what no amphora claimed and remove its path (if still ours); those paths."""
        with self._lock:
            left, self._held = self._held, {}
        removed = []
        for path, (listener, inode) in sorted(left.items()):
            listener.close()
            try:
                if path.stat().st_ino == inode:
                    path.unlink()
                    removed.append(path)
            except FileNotFoundError:
                pass
        return removed
