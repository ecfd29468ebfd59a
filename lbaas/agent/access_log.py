"""Access logs of this host's amphorae: HAProxy's ring, in a mapped file, → a rotated file.

Each amphora's HAProxy writes one raw line per HTTP request or TCP connection into a
``ring`` backed by a file (``render.haproxy.access_log``, ``backing-file``). The agent maps
that file read-only (``haproxy_ring``) and one thread per amphora takes what is new every
``BATCH_WAIT`` seconds, appends the whole lines to ``<directory>/<load balancer id>.log``
(rotated by size) with one ``write`` and, when a target is set, forwards each as a UDP
syslog message.

Why this and not a forwarder: HAProxy's ring ``server`` woke a task and sent on a socket for
every poll loop that logged, ~3 µs of HAProxy's CPU per line in the data-plane benchmark;
before that, a datagram per line cost more and lost lines whenever the reader was held up
for ~10 ms (the sender's socket buffer holds ~170 lines). With the mapped file a worker only
copies its line into memory, and nothing it does depends on the agent: the ring keeps the
newest ``RING_SIZE`` bytes (~60,000 lines) whether the agent reads, is slow or restarts.

Which file: HAProxy's master creates the file at every parse of the configuration and
renames the one it finds to ``<file>.bak`` (so also at each ``haproxy -c`` and reload), and
a worker keeps writing the file it was started with whatever its name is now. So the reader
finds each worker (the children of the master in the pid file) and its ring by the
worker's own mappings (``worker_rings``), and keeps reading a replaced worker's ring until
that worker has exited, then once more: its last lines are never lost to a reload.

Where it resumes: the absolute position read up to in each ring (rings are told apart by
inode) is saved beside the rings with every write, so a restarted agent appends what the
rings took meanwhile, no line twice and none missed. Lines of the ring that are not a request of this
load balancer (HAProxy's own "Proxy ... stopped" at a reload) are left out.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from lbaas.agent.haproxy_ring import RingFile, UnsupportedRing, worker_rings
from lbaas.private_files import make_private_directory

log = logging.getLogger(__name__)

#: Seconds the reader waits between two reads: lines are written in batches this far apart.
BATCH_WAIT = 0.02
#: Seconds between two looks for new or exited workers (after a reload: its new worker).
_SCAN_EVERY = 0.1
#: Bytes taken from one ring per read at most, so a backlog is written in several batches.
_READ_MAX = 8 << 20
#: Bytes at the start of a line that hold its load balancer id (after the project id).
_ID_WITHIN = 160
#: The readers' name in ``/proc/<pid>/task/*/comm`` (``top -H``, the data-plane benchmark).
THREAD_NAME = "lbaas-accesslog"
_PR_SET_NAME = 15
_SYSLOG_PRI = b"<134>1 "  # facility local0, severity info, RFC 5424 version 1


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

    def identity(self) -> tuple[int, int]:
        """Inode and size of the file written now: any write or rotation changes them."""
        stat = os.fstat(self._fd)
        return stat.st_ino, stat.st_size

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
    """One amphora's rings and the thread that appends their new lines to its file."""

    def __init__(
        self,
        ring_path: Path,
        pid_file: Path,
        output: RotatingFile,
        forward: SyslogForwarder | None,
        loadbalancer_id: str = "",
        batch_wait: float = BATCH_WAIT,
    ) -> None:
        """``pid_file``: HAProxy's master's, whose children are the workers to read."""
        self.ring_path = ring_path
        self._pid_file = pid_file
        self._positions_file = PositionsFile(positions_file(ring_path))
        self.output = output
        self._forward = forward
        self._needle = b" " + loadbalancer_id.encode() + b" "
        self._batch_wait = batch_wait
        self.lines = 0
        #: Bytes of lines a ring overwrote before this reader took them (a warning each time).
        self.lost_bytes = 0
        self._rings: dict[int, RingFile] = {}  # by worker pid
        self._refused: set[int] = set()  # workers whose ring cannot be read
        # By ring inode: how far lines were taken, and how far they are in the file.
        self._written = self._positions_file.load(output.identity())
        self._positions = dict(self._written)
        self._pending: list[bytes] = []  # newline-ended lines read, not yet written
        self._pending_lines = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"access-log-{ring_path.stem}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        _name_os_thread(THREAD_NAME)
        scan_at = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= scan_at:
                self._scan()
                scan_at = time.monotonic() + _SCAN_EVERY
            for ring in self._rings.values():
                self._take(ring)
            self._flush()
            self._stop.wait(self._batch_wait)
        self._scan()
        for ring in self._rings.values():
            self._take(ring)
        self._flush()
        for ring in self._rings.values():
            ring.close()
        self._positions_file.close()

    def _scan(self) -> None:
        """Attach the rings of new workers; take an exited worker's last lines, let it go."""
        workers = master_children(self._pid_file)
        for pid in [pid for pid in self._rings if pid not in workers]:
            ring = self._rings.pop(pid)
            self._take(ring)
            self._flush()
            # A worker replaced before it logged anything shares its ring with the new one
            # (HAProxy renames only a file that holds lines): that position is still used.
            if all(other.inode != ring.inode for other in self._rings.values()):
                self._positions.pop(ring.inode, None)
                self._written.pop(ring.inode, None)
            ring.close()
        self._refused &= workers
        for pid in workers - self._rings.keys() - self._refused:
            attached = self._attach(pid)
            if attached is not None:
                self._rings[pid] = attached

    def _attach(self, pid: int) -> RingFile | None:
        # /proc/<pid>/map_files/ reaches the worker's own ring whatever its name now, but
        # only with CAP_SYS_ADMIN; an agent without it opens the file by its name, which is
        # the newest worker's ring unless a configuration check renamed it since.
        for path in [*worker_rings(pid, str(self.ring_path)), str(self.ring_path)]:
            try:
                return RingFile.open(path)
            except (PermissionError, FileNotFoundError):
                continue
            except (OSError, UnsupportedRing) as exc:
                self._refused.add(pid)  # said once: the scan comes back every 0.1 s
                log.error(
                    "access log %s: ring of worker %d not read: %s", self.output.path, pid, exc
                )
                return None
        return None

    def _take(self, ring: RingFile) -> None:
        """Queue what ``ring`` holds past this reader's position in it."""
        got = ring.read(self._positions.get(ring.inode, 0), _READ_MAX)
        if got.lost:
            self.lost_bytes += got.lost
            log.warning(
                "access log %s: %d bytes of lines overwritten in the ring before they were read",
                self.output.path,
                got.lost,
            )
        self._positions[ring.inode] = got.end
        if got.lines:
            self._pending.append(b"\n".join(got.lines) + b"\n")
            self._pending_lines += len(got.lines)

    def _flush(self) -> None:
        """Write the queued lines of this load balancer with one ``write``.

        Where each ring was read up to is saved just before, with the file's identity:
        a reader started after a crash between the two knows from the file whether that
        write was made, and goes on from the position after it or before it.
        """
        text, count = b"".join(self._pending), self._pending_lines
        self._pending.clear()
        self._pending_lines = 0
        if self._positions == self._written:
            return
        rings = {
            str(inode): [self._written.get(inode, 0), position]
            for inode, position in self._positions.items()
        }
        self._positions_file.save({"file": list(self.output.identity()), "rings": rings})
        if count:
            self._write(text, count)
        self._written = dict(self._positions)

    def _write(self, text: bytes, count: int) -> None:
        """Append ``count`` newline-ended lines, those of this load balancer only."""
        # Only a reload's stop adds lines that are not a request of this load balancer
        # (HAProxy's own): counting the id once per line finds them without a loop.
        lines: list[bytes] | None = None
        if text.count(self._needle) != count:
            lines = [line for line in text.split(b"\n")[:-1] if self._needle in line[:_ID_WITHIN]]
            text = b"".join(line + b"\n" for line in lines)
            count = len(lines)
        if not count:
            return
        try:
            self.output.write(text)
        except OSError as exc:
            log.error("access log %s not written: %s", self.output.path, exc)
        self.lines += count
        if self._forward is not None:
            self._forward.send(text.split(b"\n")[:-1] if lines is None else lines)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.output.close()
        if self._forward is not None:
            self._forward.close()


def positions_file(ring_path: Path) -> Path:
    """Where the reader of ``ring_path`` keeps how far it read each ring (by inode)."""
    return ring_path.with_name(ring_path.stem + ".positions")


class PositionsFile:
    """Where a reader is in each ring, one small JSON document rewritten in place.

    Saved before every write of lines (50 times a second under load), so it is one
    ``pwrite`` on a file kept open, padded with spaces to a fixed length, not a new file
    renamed into place: a process killed between two system calls cannot leave half a
    document, and the host's crash is the log file's loss as much as this one's.
    """

    SIZE = 4096

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._length = max(self.SIZE, os.fstat(self._fd).st_size)  # all of it overwritten

    def load(self, identity: tuple[int, int]) -> dict[int, int]:
        """Per ring inode, the position whose lines the file holds (see ``_flush``)."""
        try:
            raw = os.pread(self._fd, 1 << 20, 0)
            if not raw.strip():
                return {}
            saved = json.loads(raw)
            written = tuple(saved["file"]) != identity
            rings = saved["rings"].items()
            return {int(inode): int(pair[1 if written else 0]) for inode, pair in rings}
        except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:
            log.warning("access-log positions %s unreadable, rings read whole: %s", self.path, exc)
            return {}

    def save(self, document: dict[str, object]) -> None:
        data = json.dumps(document).encode()
        self._length = max(self._length, len(data))
        try:
            os.pwrite(self._fd, data.ljust(self._length), 0)
        except OSError as exc:
            log.error("access-log positions %s not saved: %s", self.path, exc)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def master_children(pid_file: Path) -> set[int]:
    """The pids of the processes HAProxy's master (in ``pid_file``) started: its workers."""
    try:
        master = int(pid_file.read_text().split()[0])
        children = Path(f"/proc/{master}/task/{master}/children").read_text()
    except (OSError, ValueError, IndexError):
        return set()
    return {int(pid) for pid in children.split()}


class AccessLogs:
    """The readers of every amphora of this agent that logs (``ensure`` at each apply)."""

    def __init__(
        self,
        directory: Path,
        ring_directory: Path,
        *,
        max_bytes: int,
        backups: int,
        syslog_target: str = "",
        batch_wait: float = BATCH_WAIT,
    ) -> None:
        self.directory = directory
        self.ring_directory = ring_directory
        self._batch_wait = batch_wait
        self._max_bytes = max_bytes
        self._backups = backups
        self._syslog_target = syslog_target
        self._readers: dict[str, AccessLogReader] = {}
        self._lock = threading.Lock()

    def ring_path(self, amphora_id: str) -> Path:
        """The file backing ``amphora_id``'s ring (what ``wire.access_log_ring`` names)."""
        return self.ring_directory / f"{amphora_id}.ring"

    def ensure(self, amphora_id: str, loadbalancer_id: str, pid_file: Path) -> None:
        """Read the rings of the HAProxy whose master writes ``pid_file`` (if not yet)."""
        with self._lock:
            if amphora_id in self._readers:
                return
            make_private_directory(self.ring_directory)
            output = RotatingFile(
                self.directory / f"{loadbalancer_id}.log", self._max_bytes, self._backups
            )
            forward = (
                SyslogForwarder(self._syslog_target, socket.gethostname())
                if self._syslog_target
                else None
            )
            self._readers[amphora_id] = AccessLogReader(
                self.ring_path(amphora_id),
                pid_file,
                output,
                forward,
                loadbalancer_id,
                batch_wait=self._batch_wait,
            )

    def lines(self, amphora_id: str) -> int:
        with self._lock:
            reader = self._readers.get(amphora_id)
        return 0 if reader is None else reader.lines

    def close(self, amphora_id: str) -> None:
        """Stop reading ``amphora_id``'s rings (its files stay for the next reader)."""
        with self._lock:
            reader = self._readers.pop(amphora_id, None)
        if reader is not None:
            reader.close()

    def forget(self, amphora_id: str) -> None:
        """Stop reading and remove the ring files and positions of a deleted amphora."""
        self.close(amphora_id)
        ring = self.ring_path(amphora_id)
        for path in _ring_files(ring):
            path.unlink(missing_ok=True)

    def close_all(self) -> None:
        with self._lock:
            readers = list(self._readers.values())
            self._readers.clear()
        for reader in readers:
            reader.close()


def _ring_files(ring: Path) -> Iterable[Path]:
    yield ring
    yield ring.with_name(ring.name + ".bak")  # HAProxy's: the file a new parse replaced
    yield positions_file(ring)
