"""A replaced worker's ring, read after its forwarder closed: only the missing lines appended.

The forwarder here is this test process (the reader knows a worker by the pid of the peer
of its connection); the ring text is what ``show events`` answers: every line the ring
still holds, oldest first, HAProxy's own messages among them.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from lbaas.amphora.access_log import AccessLogs

LB = "lb-1"


def _line(n: int) -> str:
    return f"p {LB} li 127.0.0.1 {n} GET /{n}"


def _logs(tmp_path: Path) -> AccessLogs:
    logs = AccessLogs(tmp_path / "logs", tmp_path / "sockets", max_bytes=1 << 20, backups=1)
    logs.ensure("amp", LB, logs.socket_directory / "amp.sock")
    return logs


def _forward(logs: AccessLogs, lines: list[str]) -> None:
    """As the old worker's forwarder: these lines, then its connection closes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(logs.socket_directory / "amp.sock"))
        sock.sendall("".join(f"{line}\n" for line in lines).encode())
    deadline = time.monotonic() + 10
    while logs.lines("amp") < len(lines) and time.monotonic() < deadline:
        time.sleep(0.02)


def _file_once(tmp_path: Path, count: int) -> list[str]:
    path = tmp_path / "logs" / f"{LB}.log"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            break
        time.sleep(0.02)
    time.sleep(0.6)  # one more turn of the reader: a line too many would be there now
    return path.read_text().splitlines()


def _ring(numbers: range, *own: str) -> str:
    return "".join(f"{_line(n)}\n" for n in numbers) + "".join(f"{m}\n" for m in own) + "\n"


def test_lines_after_the_last_forwarded_one_are_appended_without_haproxys_own(
    tmp_path: Path,
) -> None:
    logs = _logs(tmp_path)
    try:
        _forward(logs, [_line(n) for n in range(5)])
        stopped = "Proxy fe_x stopped (cumulated conns: FE: 7, BE: 0)."
        ring = _ring(range(8), stopped) + f"{_line(8)}\n"
        logs.recover("amp", os.getpid(), ring)
        lines = _file_once(tmp_path, 9)
    finally:
        logs.close_all()
    assert lines == [_line(n) for n in range(9)]


@pytest.mark.parametrize(
    ("forwarded", "held", "expected"),
    [
        pytest.param((), range(4), range(4), id="forwarder-never-delivered: the whole ring"),
        pytest.param(
            range(3), range(10, 13), (0, 1, 2, 10, 11, 12), id="last-forwarded-overwritten"
        ),
        pytest.param(range(3), range(3), range(3), id="all-delivered: nothing added"),
    ],
)
def test_what_the_ring_adds_to_what_the_forwarder_delivered(
    tmp_path: Path, forwarded: Sequence[int], held: range, expected: Sequence[int]
) -> None:
    logs = _logs(tmp_path)
    try:
        if forwarded:
            _forward(logs, [_line(n) for n in forwarded])
        logs.recover("amp", os.getpid(), _ring(held))
        lines = _file_once(tmp_path, len(expected))
    finally:
        logs.close_all()
    assert lines == [_line(n) for n in expected]


def test_a_ring_read_again_adds_only_what_came_since(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    try:
        _forward(logs, [_line(n) for n in range(3)])
        logs.recover("amp", os.getpid(), _ring(range(5)))
        logs.recover("amp", os.getpid(), _ring(range(7)))  # a worker held for long
        lines = _file_once(tmp_path, 7)
    finally:
        logs.close_all()
    assert lines == [_line(n) for n in range(7)]
