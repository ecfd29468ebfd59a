"""Reading a real HAProxy 2.6's access-log ring from its backing file, while it logs."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lbaas.agent.haproxy_ring import (
    RingBusy,
    RingFile,
    UnsupportedRing,
    varint_length,
    worker_rings,
)

pytestmark = pytest.mark.haproxy

HAPROXY = "/usr/sbin/haproxy"
RING_SIZE = 65536


@dataclass
class Logging:
    """A running HAProxy whose frontend logs each request's path into a file-backed ring."""

    process: subprocess.Popen[bytes]
    ring_path: Path
    port: int
    client: http.client.HTTPConnection

    def request(self, path: str) -> None:
        self.client.request("GET", path)
        response = self.client.getresponse()
        response.read()
        assert response.status == 200


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(ring_path: Path, port: int) -> str:
    return f"""
global
    log ring@access len 8192 format raw local0 info
    tune.http.logurilen 16384  # %HP is cut to this (1024 by default)
ring access
    format raw
    maxlen 8192
    size {RING_SIZE}
    backing-file {ring_path}
defaults
    mode http
    option dontlognull  # the fixture's readiness probe is no request
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend web
    bind 127.0.0.1:{port}
    log global
    log-format "%HP"
    http-request return status 200
"""


@pytest.fixture
def haproxy(tmp_path: Path) -> Iterator[Logging]:
    port = _free_port()
    ring_path = tmp_path / "access.ring"
    config = tmp_path / "haproxy.cfg"
    config.write_text(_config(ring_path, port))
    process = subprocess.Popen([HAPROXY, "-db", "-f", str(config)])
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
        yield Logging(process, ring_path, port, client)
    finally:
        client.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _collect(ring: RingFile, position: int, count: int) -> tuple[list[bytes], int, int]:
    """Read until ``count`` lines came (HAProxy logs a request just after answering it)."""
    lines: list[bytes] = []
    lost = 0
    deadline = time.monotonic() + 5
    while len(lines) < count and time.monotonic() < deadline:
        got = ring.read(position)
        lines += got.lines
        lost += got.lost
        position = got.end
        if len(lines) < count:
            time.sleep(0.005)
    return lines, position, lost


def _size(line: bytes) -> int:
    """Bytes a message takes in the ring: counter byte, varint length, payload."""
    return 1 + varint_length(len(line)) + len(line)


def _path(number: int, length: int) -> str:
    """A request path of exactly ``length`` bytes that names its request."""
    head = f"/{number}-"
    if length <= len(head):
        return "/" + "n" * (length - 1)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    body = (letters * (length // len(letters) + 2))[number % len(letters) :]
    path = head + body[: length - len(head)]
    assert len(path) == length
    return path


def test_each_request_is_one_line_read_exactly(haproxy: Logging) -> None:
    ring = RingFile.open(haproxy.ring_path)
    try:
        assert ring.inode == os.stat(haproxy.ring_path).st_ino
        start = ring.bounds()[1]
        paths = [_path(n, 40) for n in range(200)]
        for path in paths:
            haproxy.request(path)
        lines, end, lost = _collect(ring, start, len(paths))
        assert lines == [path.encode() for path in paths]
        assert lost == 0
        assert end == ring.bounds()[1]
        assert ring.read(end).lines == []
    finally:
        ring.close()


def test_lines_of_every_varint_length_and_reads_below_a_message(haproxy: Logging) -> None:
    """One-, two- and three-byte lengths (HAProxy switches at 240 and 2288 bytes)."""
    lengths = [1, 2, 3, 100, 238, 239, 240, 241, 255, 256, 257, 1000, 2047, 2048]
    lengths += [2286, 2287, 2288, 2289, 3000, 4095, 4096, 6000, 7999, 8000]
    lengths += list(range(1, 8001, 397))
    assert {varint_length(n) for n in lengths} == {1, 2, 3}
    ring = RingFile.open(haproxy.ring_path)
    try:
        position = start = ring.bounds()[1]
        read: list[bytes] = []
        for number, length in enumerate(lengths):
            haproxy.request(_path(number, length))
            got, position, lost = _collect(ring, position, 1)
            assert lost == 0
            read += got
        expected = [_path(n, length).encode() for n, length in enumerate(lengths)]
        assert read == expected
        assert position == start + sum(_size(line) for line in expected)
        # a limit far below one message: still one whole message per read
        tail = sum(_size(line) for line in expected[-5:])
        small = ring.read(position - tail, limit=10)
        assert small.lines == [expected[-5]]
        assert small.end == position - tail + _size(expected[-5])
    finally:
        ring.close()


def test_the_ring_wraps_many_times_while_read_as_haproxy_writes(haproxy: Logging) -> None:
    """A sender thread logs 3,000 lines of 270 bytes (the ring holds ~240) while this one
    reads every few milliseconds, as the agent does: every line comes whole, in order."""
    paths = [_path(n, 270) for n in range(3000)]
    sender = threading.Thread(target=lambda: [haproxy.request(path) for path in paths])
    ring = RingFile.open(haproxy.ring_path)
    try:
        position = start = ring.bounds()[1]
        read: list[bytes] = []
        lost = 0
        sender.start()
        deadline = time.monotonic() + 30
        while (sender.is_alive() or len(read) < len(paths)) and time.monotonic() < deadline:
            got = ring.read(position)
            read += got.lines
            lost += got.lost
            position = got.end
            time.sleep(0.002)
        sender.join()
        assert lost == 0
        assert read == [path.encode() for path in paths]
        assert position == start + sum(_size(line) for line in read)
        assert ring.bounds()[0] > 10 * RING_SIZE  # wrapped at least ten times
    finally:
        ring.close()


def _send(port: int, mark: str, count: int) -> None:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        for number in range(count):
            client.request("GET", _path(number, 300) + mark)
            client.getresponse().read()
    finally:
        client.close()


def test_reading_slower_than_haproxy_writes_loses_whole_lines_only(haproxy: Logging) -> None:
    """Two senders outpace a reader that naps 100 ms between reads (the ring holds ~210 of
    these lines): it gets whole lines only, each sender's in order, and the bytes lost plus
    the bytes read account for every byte logged."""
    senders = [threading.Thread(target=_send, args=(haproxy.port, mark, 2000)) for mark in "xy"]
    ring = RingFile.open(haproxy.ring_path)
    try:
        position = start = ring.bounds()[1]
        read: list[bytes] = []
        lost = 0
        for sender in senders:
            sender.start()
        while any(sender.is_alive() for sender in senders) or ring.bounds()[1] > position:
            got = ring.read(position)
            read += got.lines
            lost += got.lost
            position = got.end
            time.sleep(0.1)
        assert lost > 0
        assert position == start + lost + sum(_size(line) for line in read)
        for mark in b"xy":
            numbers = [int(line[1:].split(b"-")[0]) for line in read if line[-1] == mark]
            assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
            assert numbers[-1] == 1999  # the newest lines are never the lost ones
        for line in read:
            assert line == _path(int(line[1:].split(b"-")[0]), 300).encode() + line[-1:]
    finally:
        for sender in senders:
            sender.join()
        ring.close()


def test_a_position_the_ring_lapped_reports_the_lost_bytes(haproxy: Logging) -> None:
    ring = RingFile.open(haproxy.ring_path)
    try:
        start = ring.bounds()[1]
        paths = [_path(n, 270) for n in range(1000)]
        for path in paths:
            haproxy.request(path)
        expected = [path.encode() for path in paths]
        deadline = time.monotonic() + 5
        while (ring.read(ring.bounds()[0]).lines or [b""])[-1] != expected[-1]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        got = ring.read(start, limit=20000)  # lines after the first read too
        lines = got.lines + list(ring.messages(got.end))
        assert got.lost > 0
        skipped = len(expected) - len(lines)
        assert 0 < skipped < len(expected)
        assert lines == expected[skipped:]  # whole lines, the newest ones, in order
        assert got.lost == sum(_size(line) for line in expected[:skipped])
        # a position beyond the end (kept for another ring): all of this one, none lost
        beyond = ring.read(ring.bounds()[1] + 10**9)
        assert beyond.lost == 0 and beyond.lines == lines[: len(beyond.lines)]
    finally:
        ring.close()


def test_renamed_then_unlinked_backing_file_is_still_read_through_worker_rings(
    haproxy: Logging,
) -> None:
    pid = haproxy.process.pid
    inode = os.stat(haproxy.ring_path).st_ino
    assert worker_rings(pid, str(haproxy.ring_path)) != []
    assert worker_rings(pid, str(haproxy.ring_path.with_name("other"))) == []
    backup = haproxy.ring_path.with_name(haproxy.ring_path.name + ".bak")
    haproxy.ring_path.rename(backup)  # what a reload's configuration parse does
    for step in ("renamed", "unlinked"):
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert (f"{backup} (deleted)" in maps) == (step == "unlinked")
        found = worker_rings(pid, str(haproxy.ring_path))
        assert len(found) == 1 and found[0].startswith(f"/proc/{pid}/map_files/")
        ring = RingFile.open(found[0])
        try:
            assert ring.inode == inode
            position = ring.bounds()[1]
            paths = [_path(n, 60) + step for n in range(50)]
            for path in paths:
                haproxy.request(path)
            lines, _, lost = _collect(ring, position, len(paths))
            assert lines == [path.encode() for path in paths] and lost == 0
        finally:
            ring.close()
        backup.unlink(missing_ok=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert worker_rings(gone.pid, "/") == []


def test_files_that_are_not_rings_are_refused(tmp_path: Path, haproxy: Logging) -> None:
    noise = tmp_path / "noise"
    noise.write_bytes(os.urandom(RING_SIZE))
    small = tmp_path / "small"
    small.write_bytes(b"\0" * 40)
    grown = tmp_path / "grown"  # a real ring file whose size no longer matches its header
    grown.write_bytes(haproxy.ring_path.read_bytes() + b"\0" * 4096)
    broken = tmp_path / "broken"  # a real header claiming more data than the area holds
    header = bytearray(haproxy.ring_path.read_bytes())
    header[16:24] = (RING_SIZE * 2).to_bytes(8, "little")
    broken.write_bytes(bytes(header))
    for path in (noise, small, grown, broken):
        with pytest.raises(UnsupportedRing):
            RingFile.open(path)
    RingFile.open(haproxy.ring_path).close()  # the real one is accepted


def test_a_ring_locked_by_a_writer_throughout_is_not_read(tmp_path: Path, haproxy: Logging) -> None:
    """A copy of a real ring whose lock word stays taken, as a writer that never finishes."""
    haproxy.request("/before")
    locked = bytearray(haproxy.ring_path.read_bytes())
    locked[56:64] = (1 << 62).to_bytes(8, "little")
    path = tmp_path / "locked"
    path.write_bytes(bytes(locked))
    with RingFile.open(haproxy.ring_path) as ring:
        assert ring.read(0).lines == [b"/before"]
    with RingFile.open(path) as ring:
        with pytest.raises(RingBusy):
            ring.bounds()
        got = ring.read(0)
        assert got.lines == [] and got.end == 0 and got.lost == 0
