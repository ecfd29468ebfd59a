"""A pool's member-down policy on a real HAProxy: a long-lived TCP connection to a member
that its health check marks down is kept (``keep``) or closed by HAProxy (``cut``).

HAProxy runs a configuration rendered by lbaas for one TCP listener in front of one echo
member whose health check goes to a separate port (the member's ``monitor_port``).
Closing that port fails the check, so the member is marked down while it still serves:
what happens to the connection is HAProxy's doing, not the member's.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lbaas.model.enums import HealthMonitorType, ListenerProtocol, MemberDownPolicy, PoolProtocol
from lbaas.render.haproxy.names import backend_name, server_name
from tests.support import graphs
from tests.unit.render.haproxy_runner import (
    free_port,
    running_haproxy,
    runtime_command,
)

pytestmark = [pytest.mark.haproxy, pytest.mark.slow]

VIP = "127.0.0.1"
BOUND_S = 10.0  # against hanging only: the checks run every second


class EchoMember:
    """Echoes every line on its data port; accepts (and drops) checks on its check port."""

    def __init__(self) -> None:
        self.data = _listening()
        self.check = _listening()
        self._threads = [
            threading.Thread(target=self._echo_all, daemon=True),
            threading.Thread(target=self._drop_checks, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _echo_all(self) -> None:
        while True:
            try:
                conn, _ = self.data.accept()
            except OSError:
                return
            threading.Thread(target=_echo, args=(conn,), daemon=True).start()

    def _drop_checks(self) -> None:
        while True:
            try:
                conn, _ = self.check.accept()
            except OSError:
                return
            conn.close()

    def fail_checks(self) -> None:
        _close(self.check)

    def close(self) -> None:
        _close(self.data)
        _close(self.check)
        for thread in self._threads:
            thread.join(BOUND_S)


def _listening() -> socket.socket:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((VIP, 0))
    server.listen(16)
    return server


def _close(server: socket.socket) -> None:
    try:
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept
    except OSError:
        pass
    server.close()


def _echo(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(4096):
            conn.sendall(data)


def _server_status(sock: Path, pool_id: str, member_id: str) -> str:
    lines = runtime_command(sock, "show stat").splitlines()
    header = lines[0].lstrip("# ").split(",")
    for line in lines[1:]:
        row = dict(zip(header, line.split(","), strict=False))
        if row.get("pxname") == backend_name(pool_id) and row["svname"] == server_name(member_id):
            return row["status"]
    raise AssertionError("the member's server is not in HAProxy's statistics")


def _wait_status(sock: Path, pool_id: str, member_id: str, wanted: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while (status := _server_status(sock, pool_id, member_id)) != wanted:
        assert time.monotonic() < deadline, f"server {status}, never {wanted}"
        time.sleep(0.05)


@contextmanager
def _running(member: EchoMember, policy: MemberDownPolicy) -> Iterator[tuple[Path, int, str, str]]:
    """HAProxy in front of ``member``; yields its runtime socket, the listener's port and
    the pool and member ids."""
    check = graphs.monitor("tcp", HealthMonitorType.TCP, delay=1, timeout=1, max_retries=1,
                           max_retries_down=1)  # fmt: skip
    data_port = int(member.data.getsockname()[1])
    check_port = int(member.check.getsockname()[1])
    the_member = graphs.member("echo", VIP, data_port, monitor_port=check_port)
    pool = graphs.pool("p", [the_member], protocol=PoolProtocol.TCP, hm=check)
    pool = dataclasses.replace(pool, member_down_policy=policy)
    port = free_port(VIP)
    listener = graphs.listener("l", ListenerProtocol.TCP, port, default_pool="p")
    lb = graphs.load_balancer([listener], [pool], vip_address=VIP)
    with running_haproxy(lb, VIP, "lbdown-") as (config, _):
        yield config.parent / "rt.sock", port, pool.id, the_member.id


@pytest.fixture
def member() -> Iterator[EchoMember]:
    started = EchoMember()
    yield started
    started.close()


def _connected(sock: Path, port: int, pool_id: str, member_id: str) -> socket.socket:
    _wait_status(sock, pool_id, member_id, "UP")
    conn = socket.create_connection((VIP, port), timeout=BOUND_S)
    conn.sendall(b"before\n")
    assert conn.recv(100) == b"before\n"
    return conn


def test_keep_leaves_the_connection_of_a_member_marked_down(member: EchoMember) -> None:
    with _running(member, MemberDownPolicy.KEEP) as (sock, port, pool_id, member_id):
        with _connected(sock, port, pool_id, member_id) as conn:
            member.fail_checks()
            _wait_status(sock, pool_id, member_id, "DOWN")
            conn.sendall(b"after\n")
            assert conn.recv(100) == b"after\n"  # still on the member HAProxy marked down


def test_cut_closes_the_connection_when_the_member_is_marked_down(member: EchoMember) -> None:
    with _running(member, MemberDownPolicy.CUT) as (sock, port, pool_id, member_id):
        with _connected(sock, port, pool_id, member_id) as conn:
            member.fail_checks()
            _wait_status(sock, pool_id, member_id, "DOWN")
            # Nothing sent: HAProxy itself closes the client's side (EOF or a reset).
            try:
                closed = conn.recv(100) == b""
            except ConnectionResetError:
                closed = True
            assert closed
