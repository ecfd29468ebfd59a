"""The agent's access-log reader: a real HAProxy's ring file in, a rotated file out.

HAProxy (master and worker, ``tests.support.ring_haproxy``) logs each request into a ring
backed by a file; the reader finds the worker's ring through the master's pid file and
appends every line to the load balancer's file, across reloads and reader restarts.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lbaas.agent.access_log import AccessLogReader, AccessLogs, RotatingFile, positions_file
from tests.support.ring_haproxy import RingHaproxy, ring_haproxy
from tests.support.waiting import wait_until


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []


def _paths(lines: list[bytes]) -> list[str]:
    """The request paths of the lines, in file order."""
    return [re.search(rb'"GET (\S+) ', line).group(1).decode() for line in lines]  # type: ignore[union-attr]


def _logs(tmp_path: Path, **kwargs: object) -> AccessLogs:
    return AccessLogs(
        tmp_path / "logs",
        tmp_path / "rings",
        max_bytes=1 << 20,
        backups=2,
        **kwargs,  # type: ignore[arg-type]
    )


def _reader(
    haproxy: RingHaproxy, output: RotatingFile, batch_wait: float = 0.02
) -> AccessLogReader:
    return AccessLogReader(
        haproxy.ring, haproxy.pid_file, output, None, haproxy.loadbalancer_id, batch_wait
    )


def test_every_request_becomes_one_line_of_the_load_balancers_file(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as syslog:
        syslog.bind(("127.0.0.1", 0))
        syslog.settimeout(5)
        logs = _logs(tmp_path, syslog_target=f"127.0.0.1:{syslog.getsockname()[1]}")
        with ring_haproxy(logs.ring_directory, "lb-1") as haproxy:
            assert haproxy.ring == logs.ring_path("amp")
            logs.ensure("amp", "lb-1", haproxy.pid_file)
            try:
                for n in range(30):
                    haproxy.get(f"/{n}", 10)
                wait_until(lambda: logs.lines("amp") >= 300, 10, "300 lines")
                forwarded = syslog.recv(4096)
            finally:
                logs.close_all()
    got = _lines(tmp_path / "logs" / "lb-1.log")
    assert _paths(got) == [f"/{n}" for n in range(30) for _ in range(10)]
    assert all(line.startswith(b"proj lb-1 li ") and line.endswith(b" 200") for line in got)
    assert forwarded.startswith(b"<134>1 ") and forwarded.endswith(got[0])


def test_a_reload_loses_none_of_the_old_workers_lines(tmp_path: Path) -> None:
    """Keep-alive connections opened before the reload send one more request each, which
    the old worker serves and logs into its ring (renamed ``.bak`` by the new master): read
    to the end, as the new worker's ring is from its start."""
    output = RotatingFile(tmp_path / "lb.log", 1 << 20, 0)
    with ring_haproxy(tmp_path / "rings") as haproxy:
        reader = _reader(haproxy, output)
        connections = [http.client.HTTPConnection("127.0.0.1", haproxy.port) for _ in range(20)]
        try:
            for n, conn in enumerate(connections):
                conn.request("GET", f"/before-{n}")
                conn.getresponse().read()
            old = haproxy.workers()
            haproxy.reload()
            for n, conn in enumerate(connections):  # served by the old worker
                conn.request("GET", f"/after-{n}")
                assert conn.getresponse().read() == b"ok"
            haproxy.get("/new", 20)
            wait_until(lambda: not old & haproxy.workers(), 10, "the old worker to exit")
            wait_until(lambda: reader.lines >= 60, 10, "60 lines")
        finally:
            for conn in connections:
                conn.close()
            reader.close()
        assert (tmp_path / "rings" / "amp.ring.bak").exists()  # what the old worker wrote
    got = _paths(_lines(tmp_path / "lb.log"))
    old_paths = [f"/before-{n}" for n in range(20)] + [f"/after-{n}" for n in range(20)]
    assert sorted(got) == sorted(old_paths + ["/new"] * 20)  # (in the order HAProxy logged)


def test_a_new_reader_goes_on_where_the_last_one_stopped(tmp_path: Path) -> None:
    """No line twice, none missing: also when the agent was killed between saving where it
    was and writing those lines (the file then tells the write was not made)."""
    output_path = tmp_path / "lb.log"
    with ring_haproxy(tmp_path / "rings") as haproxy:
        reader = _reader(haproxy, RotatingFile(output_path, 1 << 20, 0))
        haproxy.get("/a", 5)
        wait_until(lambda: reader.lines >= 5, 10, "5 lines")
        reader.close()
        reader = _reader(haproxy, RotatingFile(output_path, 1 << 20, 0))
        haproxy.get("/b", 5)  # logged while no reader... and read by this one
        wait_until(lambda: reader.lines >= 5, 10, "5 more lines")
        reader.close()
        # As if killed after saving the positions of its last batch, before writing it:
        size_before = json.loads(positions_file(haproxy.ring).read_bytes())["file"][1]
        assert 0 < size_before < output_path.stat().st_size
        with output_path.open("r+b") as file:
            file.truncate(size_before)
        haproxy.get("/c", 5)
        reader = _reader(haproxy, RotatingFile(output_path, 1 << 20, 0))
        wait_until(lambda: len(_lines(output_path)) >= 15, 10, "the /b and /c lines")
        reader.close()
    assert _paths(_lines(output_path)) == ["/a"] * 5 + ["/b"] * 5 + ["/c"] * 5
    saved = json.loads(positions_file(haproxy.ring).read_bytes())
    assert list(saved["rings"]) == [str(haproxy.ring.stat().st_ino)]


def test_haproxys_own_messages_are_left_out(tmp_path: Path) -> None:
    """A reload makes the old worker log ``Proxy fe stopped`` into its ring."""
    output = RotatingFile(tmp_path / "lb.log", 1 << 20, 0)
    with ring_haproxy(tmp_path / "rings", "lb-1") as haproxy:
        reader = _reader(haproxy, output)
        try:
            haproxy.get("/before", 3)
            old = haproxy.workers()
            haproxy.reload()
            haproxy.get("/after", 3)
            wait_until(lambda: not old & haproxy.workers(), 10, "the old worker to exit")
        finally:
            reader.close()
        old_ring = (tmp_path / "rings" / "amp.ring.bak").read_bytes()
    assert b"stopped" in old_ring  # what the reader had to leave out
    assert _paths(_lines(tmp_path / "lb.log")) == ["/before"] * 3 + ["/after"] * 3


def test_a_deleted_amphora_leaves_no_ring_file(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    with ring_haproxy(logs.ring_directory) as haproxy:
        logs.ensure("amp", "lb-1", haproxy.pid_file)
        haproxy.get("/", 2)
        wait_until(lambda: logs.lines("amp") >= 2, 10, "2 lines")
        haproxy.reload()
        wait_until(lambda: positions_file(haproxy.ring).exists(), 10, "positions")
    assert {"amp.ring", "amp.ring.bak", "amp.positions"} <= {
        p.name for p in logs.ring_directory.iterdir()
    }
    logs.forget("amp")
    assert not [p.name for p in logs.ring_directory.iterdir() if p.name.startswith("amp.")]


def test_the_file_is_rotated_by_size_keeping_the_backups(tmp_path: Path) -> None:
    out = RotatingFile(tmp_path / "lb.log", max_bytes=100, backups=2)
    for n in range(10):
        out.write(f"{n:039d}\n".encode())  # 40 bytes: two per file
    out.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["lb.log", "lb.log.1", "lb.log.2"]
    assert (tmp_path / "lb.log").read_text().splitlines() == [f"{n:039d}" for n in (8, 9)]
    assert (tmp_path / "lb.log.2").read_text().splitlines() == [f"{n:039d}" for n in (4, 5)]


class _CountingFile(RotatingFile):
    """The real rotated file, counting the writes the reader makes to it."""

    writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        super().write(data)


def test_lines_logged_during_the_batch_wait_are_written_with_one_write(tmp_path: Path) -> None:
    """The reader reads, writes, then waits: what HAProxy logs meanwhile is one write."""
    output = _CountingFile(tmp_path / "lb.log", max_bytes=1 << 20, backups=0)
    with ring_haproxy(tmp_path / "rings") as haproxy:
        haproxy.get("/first")
        reader = _reader(haproxy, output, batch_wait=2.0)
        try:
            wait_until(lambda: reader.lines >= 1, 10, "the first line")
            haproxy.get("/next", 50)
            wait_until(lambda: reader.lines >= 51, 10, "51 lines")
        finally:
            reader.close()
    assert _paths(_lines(tmp_path / "lb.log")) == ["/first"] + ["/next"] * 50
    assert output.writes == 2


_HOLDS_A_MAPPING = """
import mmap, sys, time
with open(sys.argv[1], "r+b") as file:
    mapping = mmap.mmap(file.fileno(), 0)
    print("mapped", flush=True)
    time.sleep(60)
"""


def test_a_ring_laid_out_otherwise_is_refused_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another HAProxy version's ring (here: a file of noise a "worker" maps) is not
    misread: one error naming the file, nothing written, however often the reader scans."""
    ring = tmp_path / "amp.ring"
    ring.write_bytes(os.urandom(1 << 16))
    pid_file = tmp_path / "haproxy.pid"
    pid_file.write_text(f"{os.getpid()}\n")  # the "master": this process, whose child maps
    worker = subprocess.Popen(
        [sys.executable, "-c", _HOLDS_A_MAPPING, str(ring)], stdout=subprocess.PIPE
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline() == b"mapped\n"
        output = RotatingFile(tmp_path / "lb.log", 1 << 20, 0)
        with caplog.at_level(logging.ERROR, logger="lbaas.agent.access_log"):
            reader = AccessLogReader(ring, pid_file, output, None, "lb-1")
            time.sleep(0.6)  # six scans
            reader.close()
    finally:
        worker.kill()
        worker.communicate()
    refused = [r for r in caplog.records if "not read" in r.getMessage()]
    assert len(refused) == 1 and str(worker.pid) in refused[0].getMessage()
    assert reader.lines == 0 and _lines(tmp_path / "lb.log") == []
