"""The data-plane probe against a real HAProxy whose only backend has just died.

Issue 31 point 2: an agent paused a moment before the only backend of an HTTP listener
stopped; the probe sent ``HEAD /`` through HAProxy, which answered only after its connect
retries (some 3 s), past the 1 s timeout, and a healthy amphora was failed over. Here
HAProxy runs a configuration rendered by lbaas for one HTTP listener in front of one
member, the member's server is stopped, and the probe (its default timeout) must still
find HAProxy alive; a stopped HAProxy (SIGSTOP: its socket still completes handshakes)
must not. From the VIP itself the probe is rejected before a session exists, so the
frontend's session count does not move.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.health.probe import ListenerProbe
from lbaas.model.enums import ListenerProtocol
from lbaas.model.graph import LoadBalancer
from tests.support import graphs
from tests.unit.render.haproxy_runner import (
    free_port,
    running_haproxy,
    runtime_command,
)

pytestmark = pytest.mark.haproxy

VIP = "127.0.0.1"


def _frontend_sessions(sock_path: Path) -> int:
    """Sessions the listener's frontend has counted (``stot``)."""
    lines = runtime_command(sock_path, "show stat").splitlines()
    header = lines[0].lstrip("# ").split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
    return sum(int(row["stot"]) for row in rows if row["svname"] == "FRONTEND")


@pytest.fixture
def backend() -> Iterator[socket.socket]:
    """A member answering every request with 200 until its socket is closed."""
    server = socket.socket()
    server.bind((VIP, 0))
    server.listen(16)
    thread = threading.Thread(target=_answer, args=(server,), daemon=True)
    thread.start()
    yield server
    try:
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept
    except OSError:  # the test already stopped it
        pass
    server.close()
    thread.join(30)


def _answer(server: socket.socket) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:  # closed: the member died
            return
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def haproxy(backend: socket.socket) -> Iterator[tuple[LoadBalancer, subprocess.Popen[bytes], Path]]:
    member = graphs.member("only", VIP, int(backend.getsockname()[1]))
    pool = graphs.pool("p", [member])
    listener = graphs.listener("l", ListenerProtocol.HTTP, free_port(VIP), default_pool="p")
    lb = graphs.load_balancer([listener], [pool], vip_address=VIP)
    with running_haproxy(lb, VIP, "lbprobe-") as (config, process):
        yield lb, process, config.parent / "rt.sock"


def test_haproxy_whose_only_backend_just_died_is_judged_alive(
    haproxy: tuple[LoadBalancer, subprocess.Popen[bytes], Path], backend: socket.socket
) -> None:
    lb, _, _ = haproxy
    probe = ListenerProbe()  # health.probe_timeout's default
    assert probe.serving(lb)
    backend.shutdown(socket.SHUT_RDWR)
    backend.close()  # the only backend dies: HAProxy retries it for every request
    assert probe.serving(lb)


def test_a_stopped_haproxy_is_not_judged_alive(
    haproxy: tuple[LoadBalancer, subprocess.Popen[bytes], Path],
) -> None:
    lb, process, _ = haproxy
    os.kill(process.pid, signal.SIGSTOP)
    try:
        assert not ListenerProbe(timeout=0.5).serving(lb)  # its socket still accepts
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert ListenerProbe().serving(lb)


def test_the_probe_from_the_vip_is_no_session_of_the_tenant(
    haproxy: tuple[LoadBalancer, subprocess.Popen[bytes], Path],
) -> None:
    lb, _, runtime = haproxy
    before = _frontend_sessions(runtime)
    probe = ListenerProbe(timeout=10.0)  # what is counted is asked here, not how fast
    # HAProxy's reject of the probe source can reset the connection before the probe
    # half-closes it (ENOTCONN): that is HAProxy acting, and failed a run in twenty.
    for _ in range(20):
        assert probe.serving(lb)
    assert _frontend_sessions(runtime) == before
    with socket.create_connection((VIP, lb.listeners[0].protocol_port), timeout=10) as client:
        client.sendall(b"GET / HTTP/1.0\r\n\r\n")
    deadline = time.monotonic() + 30  # a bound against hanging, not an assertion
    while _frontend_sessions(runtime) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _frontend_sessions(runtime) == before + 1  # a client's connection is counted
