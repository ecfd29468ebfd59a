"""Access logs of this host's amphorae: HAProxy → datagram socket → a rotated file.

Each amphora's HAProxy sends one raw line per HTTP request or TCP connection to a UNIX
datagram socket in the amphora's directory (``log <socket> ... format raw``). The agent
binds that socket before HAProxy starts and one thread per amphora reads it, appending the
lines to ``<directory>/<load balancer id>.log`` (rotated by size) and, when a target is
set, forwarding each as a UDP syslog message. Chosen over HAProxy's ``ring`` sections after
measuring both (docs/operations.md, "Access logs"): as fast, and no framing to parse.

HAProxy never blocks on logging: when the socket's queue is full it drops the line. The
queue is counted in datagrams (``net.unix.max_dgram_qlen``, 10 by default), so the agent
raises it in its network namespace before binding (the value is taken at bind time), and
the reader drains a burst in one wake-up and writes it with one system call.
"""

from __future__ import annotations

import contextlib
import grp
import logging
import os
import socket
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

QLEN_SYSCTL = Path("/proc/sys/net/unix/max_dgram_qlen")
#: Largest line HAProxy sends (``access_log.MAX_LINE``) with room to spare.
_DATAGRAM = 16384
_BURST = 512
_RCVBUF = 4 * 1024 * 1024
_SYSLOG_PRI = b"<134>1 "  # facility local0, severity info, RFC 5424 version 1


class RotatingFile:
    """Append-only file rotated by size: ``name``, ``name.1`` (newest) ... ``name.<backups>``."""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self._backups = backups
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = self._open()
        self._size = os.fstat(self._fd).st_size

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)

    def write(self, data: bytes) -> None:
        if self._size and self._size + len(data) > self._max_bytes:
            self._rotate()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self._size += len(data)

    def _rotate(self) -> None:
        os.close(self._fd)
        if self._backups == 0:
            self.path.unlink(missing_ok=True)
        for index in range(self._backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
        if self._backups:
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        self._fd = self._open()
        self._size = 0

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


class SyslogForwarder:
    """Sends each line as an RFC 5424 message over UDP to ``host:port``."""

    def __init__(self, target: str, hostname: str) -> None:
        host, _, port = target.rpartition(":")
        self._address = (host.strip("[]"), int(port))
        family = socket.AF_INET6 if ":" in self._address[0] else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._host = hostname.encode("ascii", "replace") or b"-"

    def send(self, lines: list[bytes]) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()).encode()
        head = _SYSLOG_PRI + stamp + b" " + self._host + b" haproxy - - - "
        for line in lines:
            with contextlib.suppress(OSError):  # a syslog receiver away loses its copy only
                self._sock.sendto(head + line, self._address)

    def close(self) -> None:
        self._sock.close()


class AccessLogReader:
    """One amphora's log socket and the thread that writes its lines."""

    def __init__(
        self, socket_path: Path, output: RotatingFile, forward: SyslogForwarder | None
    ) -> None:
        self.socket_path = socket_path
        self.output = output
        self._forward = forward
        self.lines = 0
        socket_path.unlink(missing_ok=True)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
        self._sock.bind(str(socket_path))
        self._sock.settimeout(0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"access-log-{socket_path.parent.name}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                first = self._sock.recv(_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:
                return
            self._write(self._drain([first]))
        self._write(self._drain([]))  # what HAProxy sent before the stop

    def _drain(self, batch: list[bytes]) -> list[bytes]:
        while len(batch) < _BURST:
            try:
                batch.append(self._sock.recv(_DATAGRAM, socket.MSG_DONTWAIT))
            except OSError:  # BlockingIOError: the queue is empty
                break
        return batch

    def _write(self, batch: list[bytes]) -> None:
        if not batch:
            return
        lines = [line.rstrip(b"\n") for line in batch]
        try:
            self.output.write(b"\n".join(lines) + b"\n")
        except OSError as exc:
            log.error("access log %s not written: %s", self.output.path, exc)
        self.lines += len(lines)
        if self._forward is not None:
            self._forward.send(lines)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()
        self.socket_path.unlink(missing_ok=True)
        self.output.close()
        if self._forward is not None:
            self._forward.close()


def raise_queue_length(wanted: int, sysctl: Path = QLEN_SYSCTL) -> int:
    """The datagram queue length new sockets get here, raised to ``wanted`` when allowed."""
    try:
        current = int(sysctl.read_text())
    except (OSError, ValueError):
        return 0
    if current >= wanted:
        return current
    try:
        sysctl.write_text(f"{wanted}\n")
    except OSError as exc:  # not root: lines may be lost in bursts, say so once
        log.warning("cannot raise %s to %d (%s): access-log lines may be lost", sysctl, wanted, exc)
        return current
    return wanted


def _socket_directory(path: Path, group: str | None) -> None:
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for made in missing[1:]:  # HAProxy's workers must cross the parents this made
        made.chmod(0o755)
    if group is not None:
        os.chown(path, -1, grp.getgrnam(group).gr_gid)
        path.chmod(0o710)


class AccessLogs:
    """The readers of every amphora of this agent that logs (``ensure`` at each apply)."""

    def __init__(
        self,
        directory: Path,
        socket_directory: Path,
        *,
        max_bytes: int,
        backups: int,
        syslog_target: str = "",
        socket_queue: int = 4096,
    ) -> None:
        self.directory = directory
        self.socket_directory = socket_directory
        self._max_bytes = max_bytes
        self._backups = backups
        self._syslog_target = syslog_target
        self._socket_queue = socket_queue
        self._queue_raised = False
        self._readers: dict[str, AccessLogReader] = {}
        self._lock = threading.Lock()

    def ensure(
        self, amphora_id: str, loadbalancer_id: str, socket_path: Path, group: str | None = None
    ) -> None:
        """Bind ``socket_path`` (if not yet) so HAProxy's lines go to the load balancer's file.

        ``group``: the one HAProxy's workers run as, given the right to send and no more.
        """
        with self._lock:
            reader = self._readers.get(amphora_id)
            if reader is not None and reader.socket_path == socket_path:
                return
            if reader is not None:
                reader.close()
            if not self._queue_raised:
                raise_queue_length(self._socket_queue)
                self._queue_raised = True
            output = RotatingFile(
                self.directory / f"{loadbalancer_id}.log", self._max_bytes, self._backups
            )
            forward = (
                SyslogForwarder(self._syslog_target, socket.gethostname())
                if self._syslog_target
                else None
            )
            _socket_directory(socket_path.parent, group)
            reader = AccessLogReader(socket_path, output, forward)
            if group is not None:
                os.chown(socket_path, -1, grp.getgrnam(group).gr_gid)
                socket_path.chmod(0o660)
            self._readers[amphora_id] = reader

    def lines(self, amphora_id: str) -> int:
        with self._lock:
            reader = self._readers.get(amphora_id)
        return 0 if reader is None else reader.lines

    def close(self, amphora_id: str) -> None:
        with self._lock:
            reader = self._readers.pop(amphora_id, None)
        if reader is not None:
            reader.close()

    def close_all(self) -> None:
        with self._lock:
            readers = list(self._readers.values())
            self._readers.clear()
        for reader in readers:
            reader.close()
