"""Access logs of this host's amphorae: HAProxy's ring → a stream socket → a rotated file.

Each amphora's HAProxy writes one raw line per HTTP request or TCP connection into a
``ring`` in its own memory (``render.haproxy.access_log``); the ring's forwarder connects
to a UNIX stream socket the agent listens on in the amphora's socket directory and streams
the lines, each ended by a newline, many per write. One thread per amphora reads every
connection (one per HAProxy worker: two during a reload), appends whole lines to
``<directory>/<load balancer id>.log`` (rotated by size) and, when a target is set,
forwards each as a UDP syslog message.

Why a ring and not a datagram per line (what lbaas did first): a UNIX datagram is charged
to the *sender's* send buffer until it is read, and HAProxy's log socket has the default
one (``net.core.wmem_default``, 208 KiB), so only about 170 lines could wait for the
reader; a reader held up for ~10 ms at 20,000 lines/s (the agent's interpreter lock, a
loaded machine) lost lines (0.4 % in one benchmark run). A ring holds ``RING_SIZE``
(16 MiB, ~60,000 lines) per worker, keeps it while the agent restarts, and the reader
gets kilobytes per system call instead of one line. HAProxy never waits for a log: a line
that finds the ring full of unread lines overwrites the oldest (counted as dropped).

A reload soft-stops the old worker, and its forwarder closes at that instant (HAProxy 2.6
forwards nothing once stopping), so the lines of what the old worker still serves stay in
its ring. The agent holds that worker through the reload (``StatsCollector.across_reload``)
until it has no tenant session left (at most ``LAST_LINES_HOLD``) and, before letting it
go, reads its ring over the held session (``recover``): the lines after the last one its
forwarder delivered are appended, and lines that are not a request of this load balancer
(HAProxy's own "Proxy ... stopped") are left out.

Why the reader sleeps: left to itself it wakes for every forwarder write (~11 lines), and
each wake-up (select, recv, write, the interpreter lock) costs it 1.5–3 µs per line, CPU
taken from HAProxy and the clients on a small host. After reading everything there is
(into one reused buffer) and writing it with one ``write``, it waits ``BATCH_WAIT``; the
lines logged meanwhile wait in the socket and the ring, so the next wake-up moves hundreds
of them. A line reaches the file at most ``BATCH_WAIT`` plus one drain after HAProxy
logged it (more only if this host cannot schedule the thread), and nothing is lost while
less than the ring's ~60,000 lines arrive in that time.
"""

from __future__ import annotations

import contextlib
import ctypes
import grp
import logging
import os
import selectors
import socket
import struct
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from lbaas.amphora.held_log_sockets import HeldLogSockets, listen_in_place, refuses

if TYPE_CHECKING:
    from lbaas.amphora.keeper_client import KeeperClient

log = logging.getLogger(__name__)

#: Bytes read per system call; HAProxy's forwarder writes as much as the socket takes.
_CHUNK = 1 << 20
#: Seconds the reader waits after each drain: lines are written in batches this far apart.
BATCH_WAIT = 0.02
#: Bytes read from one connection per wake-up at most, so two workers take turns.
_DRAIN_MAX = 8 << 20
#: A line longer than this without its newline (HAProxy sends at most 8192) is written as is.
_MAX_TAIL = 65536
#: The readers' name in ``/proc/<pid>/task/*/comm`` (``top -H``, the data-plane benchmark).
THREAD_NAME = "lbaas-accesslog"
_PR_SET_NAME = 15
_SYSLOG_PRI = b"<134>1 "  # facility local0, severity info, RFC 5424 version 1
_PEERCRED = struct.Struct("3i")  # pid, uid, gid of the worker that connected
#: Seconds ``recover`` waits for the reader to reach the end of the old worker's stream.
_RECOVER_WAIT = 2.0
#: Seconds a replaced worker is held at most for its last lines: the default
#: ``hard-stop-after`` (``providers.amphora_hard_stop_after``), when HAProxy stops it anyway.
LAST_LINES_HOLD = 900.0
#: Workers whose last delivered line is remembered (one per reload; the oldest go first).
_WORKERS_KEPT = 64


def _name_os_thread(name: str) -> None:
    """Give the calling thread ``name`` in the kernel, so its CPU can be told apart."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


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
    """One amphora's log socket and the thread that writes the lines HAProxy streams to it."""

    def __init__(
        self,
        socket_path: Path,
        output: RotatingFile,
        forward: SyslogForwarder | None,
        loadbalancer_id: str = "",
        batch_wait: float = BATCH_WAIT,
        listener: socket.socket | None = None,
    ) -> None:
        """``listener``: one already listening at ``socket_path`` (``HeldLogSockets``),
        taken over with the connections it queued; else one is bound."""
        self.socket_path = socket_path
        self._batch_wait = batch_wait
        self.output = output
        self._forward = forward
        self._loadbalancer_id = loadbalancer_id.encode()
        self.lines = 0
        self._listener = listener if listener is not None else listen_in_place(socket_path)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._tails: dict[socket.socket, bytes] = {}  # per connection: a line not yet ended
        self._pids: dict[socket.socket, int] = {}  # per connection: the worker sending
        self._last: dict[int, bytes] = {}  # per worker pid: the last line it delivered
        self._recovered: deque[bytes] = deque()  # lines from ``recover``, for this thread
        self._buffer = bytearray(_CHUNK)  # reused: a fresh 1 MiB per recv costs a mmap
        self._pending: list[bytes] = []  # whole lines read this wake-up, written at its end
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"access-log-{socket_path.parent.name}", daemon=True
        )
        self._thread.start()

    @property
    def listener(self) -> socket.socket:
        return self._listener

    def _run(self) -> None:
        _name_os_thread(THREAD_NAME)
        while not self._stop.is_set():
            for key, _ in self._selector.select(0.5):
                if key.fileobj is self._listener:
                    self._accept()
                else:
                    self._drain(key.fileobj)  # type: ignore[arg-type]
            while self._recovered:
                self._pending.append(self._recovered.popleft())
            if self._flush():
                self._stop.wait(self._batch_wait)
        for conn in list(self._tails):  # what HAProxy sent before the stop
            while conn in self._tails and self._read(conn):
                pass
        self._pending.extend(self._recovered)
        self._flush()

    def _drain(self, conn: socket.socket) -> None:
        read = 0
        while read < _DRAIN_MAX and (got := self._read(conn)):
            read += got

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:  # BlockingIOError: the forwarder gave up already
            return
        conn.setblocking(False)
        self._tails[conn] = b""
        cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        self._pids[conn] = _PEERCRED.unpack(cred)[0]
        while len(self._last) > _WORKERS_KEPT:  # workers long gone: forget the oldest
            del self._last[next(iter(self._last))]
        self._selector.register(conn, selectors.EVENT_READ)

    def _read(self, conn: socket.socket) -> int:
        """Queue the whole lines read from ``conn``: bytes read, 0 when nothing was there."""
        try:
            size = conn.recv_into(self._buffer)
        except BlockingIOError:
            return 0
        except OSError:
            size = 0
        if not size:  # the worker is gone: its unfinished line, if any, is still a line
            tail = self._tails.pop(conn)
            pid = self._pids.pop(conn, 0)
            self._selector.unregister(conn)
            conn.close()
            if tail:
                self._last[pid] = tail
                self._pending.append(tail + b"\n")
            return 0
        data = self._tails[conn] + memoryview(self._buffer)[:size]
        end = data.rfind(b"\n") + 1
        if end == 0 and len(data) > _MAX_TAIL:
            data, end = data + b"\n", len(data) + 1
        self._tails[conn] = bytes(data[end:])
        if end:
            self._last[self._pids.get(conn, 0)] = data[data.rfind(b"\n", 0, end - 1) + 1 : end - 1]
            self._pending.append(bytes(data[:end]))
        return size

    def recover(self, pid: int, ring: str) -> int:
        """Append the lines of ``ring`` (worker ``pid``'s) its forwarder did not deliver.

        ``ring`` is the worker's whole ring, oldest first, and the forwarder (then earlier
        calls) delivered a prefix of it: what follows the last line delivered is missing
        (everything, when nothing was or the ring has since overwritten that line). The
        number of lines appended.
        """
        deadline = time.monotonic() + _RECOVER_WAIT
        while pid in self._pids.values() and time.monotonic() < deadline:
            time.sleep(0.02)  # the reader is still taking what the forwarder sent
        held = [line for line in ring.encode(errors="replace").split(b"\n") if line]
        last = self._last.get(pid)
        if held:  # a later read of the same ring starts after this one
            self._last[pid] = held[-1]
        if last is not None and last in held:
            held = held[len(held) - held[::-1].index(last) :]
        missing = [line for line in held if line.split(b" ", 2)[1:2] == [self._loadbalancer_id]]
        if missing:
            self._recovered.append(b"\n".join(missing) + b"\n")
        return len(missing)

    def _flush(self) -> bool:
        """Write the queued lines with one ``write``; False when there were none."""
        if not self._pending:
            return False
        chunk = b"".join(self._pending)
        self._pending.clear()
        try:
            self.output.write(chunk)
        except OSError as exc:
            log.error("access log %s not written: %s", self.output.path, exc)
        self.lines += chunk.count(b"\n")
        if self._forward is not None:
            self._forward.send(chunk.split(b"\n")[:-1])
        return True

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._tails:
            conn.close()
        self._selector.close()
        self._listener.close()
        self.socket_path.unlink(missing_ok=True)
        self.output.close()
        if self._forward is not None:
            self._forward.close()


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
        batch_wait: float = BATCH_WAIT,
        held: HeldLogSockets | None = None,
        keeper: KeeperClient | None = None,
    ) -> None:
        """``held``: the listeners kept for the amphorae about to be adopted (taken by
        ``ensure``; the rest closed by ``release_held``). ``keeper``: the socket keeper
        every reader's listener is handed to (``socket_keeper``), dropped with it."""
        self.directory = directory
        self.keeper = keeper
        self._held = held if held is not None else HeldLogSockets()
        self._batch_wait = batch_wait
        self.socket_directory = socket_directory
        self._max_bytes = max_bytes
        self._backups = backups
        self._syslog_target = syslog_target
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
                self._close_reader(reader)
            output = RotatingFile(
                self.directory / f"{loadbalancer_id}.log", self._max_bytes, self._backups
            )
            forward = (
                SyslogForwarder(self._syslog_target, socket.gethostname())
                if self._syslog_target
                else None
            )
            _socket_directory(socket_path.parent, group)
            reader = AccessLogReader(
                socket_path,
                output,
                forward,
                loadbalancer_id,
                batch_wait=self._batch_wait,
                listener=self._held.take(socket_path),
            )
            if group is not None:
                os.chown(socket_path, -1, grp.getgrnam(group).gr_gid)
                socket_path.chmod(0o660)
            self._readers[amphora_id] = reader
            if self.keeper is not None:
                self.keeper.hold([(socket_path, reader.listener)])

    def release_held(self) -> list[Path]:
        """Close the held listeners no adopted amphora took; the paths removed."""
        removed = self._held.release()
        if self.keeper is not None:
            self.keeper.drop(removed)
        return removed

    def remove_stale_sockets(self) -> list[Path]:
        """Remove the sockets of the directory that nothing listens on; the removed paths.

        An agent killed outright leaves its amphorae's sockets; those of amphorae deleted
        before it came back would stay for good. A socket is stale when connecting to it is
        refused: a reader's socket listens from the moment it has its name.
        """
        with self._lock:
            ours = {reader.socket_path for reader in self._readers.values()}
        removed: list[Path] = []
        if not self.socket_directory.is_dir():
            return removed
        for path in sorted(self.socket_directory.glob("*.sock")):
            if path in ours or not path.is_socket():
                continue
            if refuses(path):
                path.unlink(missing_ok=True)
                removed.append(path)
        return removed

    def recover(self, amphora_id: str, pid: int, ring: str) -> None:
        """Lines a replaced worker of ``amphora_id`` logged after its forwarder closed."""
        with self._lock:
            reader = self._readers.get(amphora_id)
        if reader is not None:
            count = reader.recover(pid, ring)
            log.debug("access log of amphora %s: %d lines from worker %d", amphora_id, count, pid)

    def lines(self, amphora_id: str) -> int:
        with self._lock:
            reader = self._readers.get(amphora_id)
        return 0 if reader is None else reader.lines

    def close(self, amphora_id: str) -> None:
        with self._lock:
            reader = self._readers.pop(amphora_id, None)
        if reader is not None:
            self._close_reader(reader)

    def _close_reader(self, reader: AccessLogReader) -> None:
        if self.keeper is not None:
            self.keeper.drop([reader.socket_path])
        reader.close()

    def close_all(self) -> None:
        with self._lock:
            readers = list(self._readers.values())
            self._readers.clear()
        for reader in readers:
            self._close_reader(reader)

    def detach_keeper(self) -> None:
        """Leave the keeper holding what it holds (the agent stops)."""
        if self.keeper is not None:
            self.keeper.close()
            self.keeper = None
