"""The agent's access-log reader: streamed lines in, lines in a size-rotated file, syslog copy."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from lbaas.amphora.access_log import AccessLogReader, AccessLogs, RotatingFile


def _send(path: Path, lines: list[bytes]) -> None:
    """As HAProxy's ring forwarder does: newline-ended lines, cut anywhere between writes."""
    stream = b"".join(line + b"\n" for line in lines)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(path))
        for start in range(0, len(stream), 1000):  # most writes end inside a line
            sock.sendall(stream[start : start + 1000])
            time.sleep(0.001)


def _wait_for(logs: AccessLogs, amphora_id: str, count: int) -> None:
    deadline = time.monotonic() + 10
    while logs.lines(amphora_id) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def test_every_streamed_line_becomes_one_line_of_the_load_balancers_file(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as syslog:
        syslog.bind(("127.0.0.1", 0))
        syslog.settimeout(5)
        target = f"127.0.0.1:{syslog.getsockname()[1]}"
        logs = AccessLogs(
            tmp_path / "logs",
            tmp_path / "sockets",
            max_bytes=1 << 20,
            backups=2,
            syslog_target=target,
        )
        sock = logs.socket_directory / "amp.sock"
        logs.ensure("amp", "lb-1", sock)
        try:
            lines = [f"p lb-1 li 127.0.0.1 {n} GET".encode() for n in range(300)]
            _send(sock, lines)
            _wait_for(logs, "amp", 300)
            forwarded = syslog.recv(4096)
        finally:
            logs.close_all()
    text = (tmp_path / "logs" / "lb-1.log").read_bytes()
    assert text.splitlines() == lines
    assert forwarded.startswith(b"<134>1 ") and forwarded.endswith(lines[0])
    assert not sock.exists()  # closed: the socket is gone


def test_the_file_is_rotated_by_size_keeping_the_backups(tmp_path: Path) -> None:
    out = RotatingFile(tmp_path / "lb.log", max_bytes=100, backups=2)
    for n in range(10):
        out.write(f"{n:039d}\n".encode())  # 40 bytes: two per file
    out.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["lb.log", "lb.log.1", "lb.log.2"]
    assert (tmp_path / "lb.log").read_text().splitlines() == [f"{n:039d}" for n in (8, 9)]
    assert (tmp_path / "lb.log.2").read_text().splitlines() == [f"{n:039d}" for n in (4, 5)]


def test_two_workers_streaming_at_once_and_an_unended_last_line(tmp_path: Path) -> None:
    """During a reload the old and the new worker are both connected; a worker that goes
    away in the middle of a line still leaves that line, whole lines never interleave."""
    logs = AccessLogs(tmp_path / "logs", tmp_path / "sockets", max_bytes=1 << 20, backups=0)
    sock = logs.socket_directory / "amp.sock"
    logs.ensure("amp", "lb-2", sock)
    try:
        with (
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as old,
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as new,
        ):
            old.connect(str(sock))
            new.connect(str(sock))
            old.sendall(b"old 1\nold ")
            new.sendall(b"new 1\n")
            time.sleep(0.05)
            old.sendall(b"2\nold 3")  # no newline: the worker exits here
        _wait_for(logs, "amp", 4)
    finally:
        logs.close_all()
    got = (tmp_path / "logs" / "lb-2.log").read_bytes().splitlines()
    assert sorted(got) == [b"new 1", b"old 1", b"old 2", b"old 3"]
    assert got.index(b"old 1") < got.index(b"old 2") < got.index(b"old 3")


class _CountingFile(RotatingFile):
    """The real rotated file, counting the writes the reader makes to it."""

    writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        super().write(data)


def test_lines_arriving_during_the_batch_wait_are_written_with_one_write(
    tmp_path: Path,
) -> None:
    """The reader wakes, writes what it read, then waits: the forwarder's many small
    writes made meanwhile reach the file whole, in order, as one write (its CPU per line)."""
    output = _CountingFile(tmp_path / "lb.log", max_bytes=1 << 20, backups=0)
    sock = tmp_path / "amp.sock"
    reader = AccessLogReader(sock, output, None, batch_wait=2.0)
    lines = [f"line {n}".encode() for n in range(51)]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(sock))
            conn.sendall(lines[0] + b"\n")
            deadline = time.monotonic() + 10
            while reader.lines < 1 and time.monotonic() < deadline:
                time.sleep(0.005)
            for line in lines[1:]:  # 50 writes, as a forwarder woken per line makes them
                conn.sendall(line + b"\n")
                time.sleep(0.001)  # a reader that does not wait would wake for each
            while reader.lines < len(lines) and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        reader.close()
    assert (tmp_path / "lb.log").read_bytes().splitlines() == lines
    assert output.writes == 2


def test_stale_sockets_are_removed_and_listening_ones_kept(tmp_path: Path) -> None:
    """A killed agent's sockets refuse and go; another reader's listening socket, this
    agent's own and a file that is no socket stay."""
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    stale = sockets / "dead.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(stale))  # closed without unlinking, as a SIGKILL leaves it
    (sockets / "notes.sock").write_text("not a socket")
    other = AccessLogs(tmp_path / "other-logs", sockets, max_bytes=1 << 20, backups=0)
    other.ensure("live", "lb-live", sockets / "live.sock")
    logs = AccessLogs(tmp_path / "logs", sockets, max_bytes=1 << 20, backups=0)
    logs.ensure("mine", "lb-mine", sockets / "mine.sock")
    try:
        assert logs.remove_stale_sockets() == [stale]
        assert sorted(p.name for p in sockets.iterdir()) == ["live.sock", "mine.sock", "notes.sock"]
        _send(sockets / "live.sock", [b"still served"])  # the probe did not disturb it
        _wait_for(other, "live", 1)
        assert (tmp_path / "other-logs" / "lb-live.log").read_bytes() == b"still served\n"
    finally:
        logs.close_all()
        other.close_all()
