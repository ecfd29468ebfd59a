"""The agent's access-log reader: datagrams in, lines in a size-rotated file, syslog copy."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from lbaas.agent.access_log import AccessLogs, RotatingFile, raise_queue_length


def _send(path: Path, lines: list[bytes]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        for line in lines:
            sock.sendto(line, str(path))


def _wait_for(logs: AccessLogs, amphora_id: str, count: int) -> None:
    deadline = time.monotonic() + 10
    while logs.lines(amphora_id) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def test_every_datagram_becomes_one_line_of_the_load_balancers_file(tmp_path: Path) -> None:
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


def test_the_queue_length_is_raised_only_upwards(tmp_path: Path) -> None:
    sysctl = tmp_path / "max_dgram_qlen"
    sysctl.write_text("10\n")
    assert raise_queue_length(4096, sysctl) == 4096
    assert sysctl.read_text().strip() == "4096"
    assert raise_queue_length(100, sysctl) == 4096
    assert raise_queue_length(10, tmp_path / "missing") == 0
