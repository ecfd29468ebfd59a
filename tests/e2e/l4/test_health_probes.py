"""The real probes against real servers on 127.0.0.0/8 (and PING in a namespace of our own).

TCP: a listening socket passes, a closed port fails. UDP-CONNECT: a bound socket passes,
a closed port fails (the kernel's ICMP port unreachable). HTTP: a real ``http.server``;
the status must be in ``expected_codes``. PING: an echo reply from 127.0.0.1 passes (raw
or datagram ICMP socket, whichever the kernel allows); inside a namespace this test creates
with its loopback down, nothing answers. The checker's thread and loop run the probes.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import HealthChange, MonitorSpec, ProbeType, Target
from lbaas.l4.health.probes import NetworkProber

ADDRESS = "127.0.0.1"


def monitor(kind: ProbeType, **http: str) -> MonitorSpec:
    return MonitorSpec(kind, delay=0.2, timeout=1.0, rise=1, fall=1, **http)  # type: ignore[arg-type]


def probe(target: Target) -> bool:
    async def once() -> bool:
        try:
            return await asyncio.wait_for(NetworkProber().probe(target), target.monitor.timeout)
        except (OSError, TimeoutError):
            return False

    return asyncio.run(once())


def free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind((ADDRESS, 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def tcp_server() -> Iterator[int]:
    with socket.socket() as server:
        server.bind((ADDRESS, 0))
        server.listen(16)
        yield server.getsockname()[1]


@pytest.fixture
def udp_server() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind((ADDRESS, 0))
        yield server.getsockname()[1]


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200 if self.path == "/ok" else 503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def http_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer((ADDRESS, 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_tcp(tcp_server: int) -> None:
    assert probe(Target("up", ADDRESS, tcp_server, monitor(ProbeType.TCP))) is True
    closed = free_port(socket.SOCK_STREAM)
    assert probe(Target("down", ADDRESS, closed, monitor(ProbeType.TCP))) is False


def test_udp_connect(udp_server: int) -> None:
    assert probe(Target("up", ADDRESS, udp_server, monitor(ProbeType.UDP_CONNECT))) is True
    closed = free_port(socket.SOCK_DGRAM)
    assert probe(Target("down", ADDRESS, closed, monitor(ProbeType.UDP_CONNECT))) is False


def test_http(http_server: int) -> None:
    ok = monitor(ProbeType.HTTP, url_path="/ok")
    assert probe(Target("up", ADDRESS, http_server, ok)) is True
    failing = monitor(ProbeType.HTTP, url_path="/broken")
    assert probe(Target("503", ADDRESS, http_server, failing)) is False
    accepting_503 = monitor(ProbeType.HTTP, url_path="/broken", expected_codes="500-503")
    assert probe(Target("503 ok", ADDRESS, http_server, accepting_503)) is True
    closed = free_port(socket.SOCK_STREAM)
    assert probe(Target("down", ADDRESS, closed, ok)) is False


@pytest.mark.root
def test_ping() -> None:
    if os.geteuid() != 0:
        pytest.skip("raw ICMP sockets and namespaces need root")
    assert probe(Target("up", ADDRESS, 0, monitor(ProbeType.PING))) is True
    namespace = f"hp-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
    try:  # loopback left down: nothing in the namespace answers
        script = (
            "import sys; sys.path[:0] = sys.argv[1:2]; from test_health_probes import *; "
            "print(probe(Target('down', ADDRESS, 0, monitor(ProbeType.PING))))"
        )
        here = os.path.dirname(__file__)
        out = subprocess.run(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", script, here],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        assert out.strip() == "False"
    finally:
        subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)


def test_the_checker_marks_a_stopped_server_down_and_back() -> None:
    changes: list[HealthChange] = []
    checker = HealthChecker(NetworkProber(), changes.extend, batch_count=1, batch_delay=0.0)
    spec = MonitorSpec(ProbeType.TCP, delay=0.1, timeout=0.5, rise=2, fall=2)
    listener = socket.socket()
    listener.bind((ADDRESS, 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    checker.start()
    try:
        checker.set_targets("lb", [Target("m", ADDRESS, port, spec)])
        wait_until(lambda: checker.probes >= 3)
        assert changes == []
        listener.close()
        wait_until(lambda: checker.states("lb") == {"m": False})
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((ADDRESS, port))
        listener.listen(16)
        wait_until(lambda: checker.states("lb") == {"m": True})
        wait_until(lambda: len(changes) == 2)
        assert [c.healthy for c in changes] == [False, True]
    finally:
        checker.stop()
        listener.close()


def wait_until(predicate: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"not reached within {timeout}s")
