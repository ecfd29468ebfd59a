"""Wakeups across processes: a committed job wakes the idle workers on the same host at once.

Each worker process binds a Unix datagram socket in one directory derived from the state
directory; whoever commits a job sends one byte to every socket there. A wakeup is only a
hint — an idle worker still polls every ``worker.poll_interval`` — so a send never blocks
and a lost datagram costs latency, never a job. A socket nobody is bound to any more (its
worker was killed) refuses the datagram and is removed by the next sender.

Workers on other hosts (PostgreSQL deployments) are reached by ``NOTIFY``
(``lbaas.db.jobs.job_notify``), and by the poll.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

LOG = logging.getLogger(__name__)

_SOCKET_SUFFIX = ".sock"


def wakeup_directory(state_dir: Path) -> Path:
    """Where the sockets of the workers sharing ``state_dir`` live (the same for all)."""
    return state_dir.resolve() / "run" / "wakeup"


@contextlib.contextmanager
def short_directory(directory: Path) -> Iterator[str]:
    """A short name for ``directory`` (``/proc/self/fd/<n>``) while the block runs.

    sockaddr_un holds 107 bytes of path, less than a deep state directory needs; reaching
    the directory through an open descriptor keeps every socket address short whatever
    the state directory's depth, so the sockets stay inside it (never in a shared /tmp,
    which a killed worker's socket would outlive and a unit's PrivateTmp would split).
    Raises FileNotFoundError when the directory does not exist.
    """
    fd = os.open(directory, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


class WakeupSender:
    """The committing side: one byte to every worker socket in the directory."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.setblocking(False)

    def notify(self) -> None:
        try:
            with short_directory(self._directory) as short:
                for entry in os.scandir(self._directory):
                    if entry.name.endswith(_SOCKET_SUFFIX):
                        self._send(f"{short}/{entry.name}", entry.path)
        except FileNotFoundError:
            return  # no worker has started yet (or the last one removed the directory)

    def _send(self, address: str, path: str) -> None:
        try:
            self._socket.sendto(b"!", address)
        except BlockingIOError:
            pass  # its queue is full: that worker has wakeups enough
        except ConnectionRefusedError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # nobody is bound to it: its worker is gone
        except OSError as exc:
            LOG.debug("wakeup to %s not sent: %s", path, exc)

    def close(self) -> None:
        self._socket.close()


class WakeupListener:
    """The worker side: a bound socket and a thread that calls ``on_wake`` per datagram."""

    def __init__(self, directory: Path, on_wake: Callable[[], None]) -> None:
        self._directory = directory
        self.path = directory / f"{os.getpid()}-{os.urandom(4).hex()}{_SOCKET_SUFFIX}"
        self._on_wake = on_wake
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for attempt in range(2):
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                with short_directory(directory) as short:
                    self._socket.bind(f"{short}/{self.path.name}")
                break
            except FileNotFoundError:
                # The last listener to stop removed the directory in between: again.
                if attempt:
                    raise
        # Wake up now and then to see whether we were stopped.
        self._socket.settimeout(0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wakeup", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._socket.recv(64)
            except TimeoutError:
                continue
            except OSError:
                if not self._stop.is_set():
                    LOG.exception("wakeup socket failed; the worker falls back to polling")
                return
            self._on_wake()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
        self._socket.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        # The last one out leaves no empty directory behind (others keep it: not empty).
        with contextlib.suppress(OSError):
            self._directory.rmdir()
