"""A pool's member-down policy on a real HAProxy: long-lived connections to a member that
its health check marks down are kept (``keep``) or closed by HAProxy (``cut``).

HAProxy runs the configuration lbaas renders for one listener in front of members whose
health checks go to a port of their own (the member's ``monitor_port``). Closing that port
fails the check, so the member is marked down while it still serves: what happens to the
connections is HAProxy's doing, not the member's. TCP: an echo connection. HTTP: a response
streamed for as long as it is read (what a download, server-sent events or a long poll
are), and an idle keep-alive connection, whose next request goes to the backup member under
either policy (HAProxy balances each request; only a request in progress has a member).
"""

from __future__ import annotations

import dataclasses
import http.client
import socket
import threading
import time
from collections.abc import Callable, Iterator
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
Serve = Callable[[socket.socket], None]


class Member:
    """Serves each connection on its data port with ``serve``; accepts (and drops) health
    checks on its check port until ``fail_checks``."""

    def __init__(self, serve: Serve) -> None:
        self.data = _listening()
        self.check = _listening()
        self._threads = [
            threading.Thread(target=_accept_all, args=(self.data, serve), daemon=True),
            threading.Thread(target=_accept_all, args=(self.check, _drop), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

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


def _accept_all(server: socket.socket, serve: Serve) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:  # closed
            return
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def _close(server: socket.socket) -> None:
    try:
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept
    except OSError:
        pass
    server.close()


def _drop(conn: socket.socket) -> None:
    conn.close()


def _echo(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(4096):
            conn.sendall(data)


def _http(name: str) -> Serve:
    """HTTP/1.1 keep-alive: ``/name`` answers the member's name, ``/stream`` streams a
    chunk every 50 ms (``name stamp;``, the stamp this process's monotonic clock) until the
    peer goes away."""

    def serve(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as requests:
            while line := requests.readline():
                while requests.readline() not in (b"\r\n", b""):
                    pass  # the headers
                if not line.split()[1].startswith(b"/stream"):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(name))
                    conn.sendall(name.encode())
                    continue
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                try:
                    while True:  # each chunk stamped with when it was sent
                        chunk = f"{name} {time.monotonic():.3f};"
                        conn.sendall(f"{len(chunk):x}\r\n{chunk}\r\n".encode())
                        time.sleep(0.05)
                except OSError:
                    return

    return serve


Start = Callable[[Serve], Member]


@pytest.fixture
def members() -> Iterator[Start]:
    started: list[Member] = []

    def start(serve: Serve) -> Member:
        started.append(Member(serve))
        return started[-1]

    yield start
    for member in started:
        member.close()


@dataclasses.dataclass(frozen=True)
class Running:
    sock: Path
    port: int
    pool_id: str
    member_ids: tuple[str, ...]

    def status(self, index: int) -> str:
        lines = runtime_command(self.sock, "show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        names = (backend_name(self.pool_id), server_name(self.member_ids[index]))
        for line in lines[1:]:
            row = dict(zip(header, line.split(","), strict=False))
            if (row.get("pxname"), row.get("svname")) == names:
                return row["status"]
        raise AssertionError("the member's server is not in HAProxy's statistics")

    def wait_status(self, index: int, wanted: str) -> None:
        deadline = time.monotonic() + BOUND_S
        while (status := self.status(index)) != wanted:
            assert time.monotonic() < deadline, f"server {status}, never {wanted}"
            time.sleep(0.05)


@contextmanager
def running(
    protocol: ListenerProtocol, policy: MemberDownPolicy, *members: Member
) -> Iterator[Running]:
    """HAProxy in front of ``members`` (the first primary, the others backups), every one
    UP when it is yielded."""
    check = graphs.monitor("tcp", HealthMonitorType.TCP, delay=1, timeout=1, max_retries=1,
                           max_retries_down=1)  # fmt: skip
    servers = [
        graphs.member(
            f"m{index}",
            VIP,
            int(member.data.getsockname()[1]),
            backup=index > 0,
            monitor_port=int(member.check.getsockname()[1]),
        )
        for index, member in enumerate(members)
    ]
    pool = graphs.pool("p", servers, protocol=PoolProtocol(protocol.value), hm=check)
    pool = dataclasses.replace(pool, member_down_policy=policy)
    port = free_port(VIP)
    listener = graphs.listener("l", protocol, port, default_pool="p")
    lb = graphs.load_balancer([listener], [pool], vip_address=VIP)
    with running_haproxy(lb, VIP, "lbdown-") as (config, _):
        found = Running(config.parent / "rt.sock", port, pool.id, tuple(s.id for s in servers))
        for index in range(len(servers)):
            found.wait_status(index, "UP")
        yield found


def closed_by_peer(conn: socket.socket) -> bool:
    """Whether the peer closes ``conn`` (EOF or a reset) before ``BOUND_S`` of silence,
    reading whatever it still sends."""
    try:
        while conn.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def streaming(port: int) -> socket.socket:
    """A client of ``/stream`` that has read the start of the response."""
    conn = socket.create_connection((VIP, port), timeout=BOUND_S)
    conn.sendall(b"GET /stream HTTP/1.1\r\nHost: lb\r\n\r\n")
    assert conn.recv(65536).startswith(b"HTTP/1.1 200")
    return conn


def streamed_after(conn: socket.socket, moment: float) -> str:
    """The member whose chunk stamped after ``moment`` ``conn`` receives ('' if closed)."""
    text = ""
    while data := conn.recv(65536):
        text += data.decode(errors="replace")
        for chunk in text.split(";")[:-1]:
            name, _, stamp = chunk.rpartition("\n")[2].partition(" ")
            if stamp and float(stamp) > moment:
                return name
    return ""


def name_over(idle: http.client.HTTPConnection) -> str:
    idle.request("GET", "/name")
    return idle.getresponse().read().decode()


def test_tcp_keep_leaves_the_connection_of_a_member_marked_down(members: Start) -> None:
    member = members(_echo)
    with running(ListenerProtocol.TCP, MemberDownPolicy.KEEP, member) as lb:
        with socket.create_connection((VIP, lb.port), timeout=BOUND_S) as conn:
            conn.sendall(b"before\n")
            assert conn.recv(100) == b"before\n"
            member.fail_checks()
            lb.wait_status(0, "DOWN")
            conn.sendall(b"after\n")
            assert conn.recv(100) == b"after\n"  # still on the member HAProxy marked down


def test_tcp_cut_closes_the_connection_when_the_member_is_marked_down(members: Start) -> None:
    member = members(_echo)
    with running(ListenerProtocol.TCP, MemberDownPolicy.CUT, member) as lb:
        with socket.create_connection((VIP, lb.port), timeout=BOUND_S) as conn:
            conn.sendall(b"before\n")
            assert conn.recv(100) == b"before\n"
            member.fail_checks()
            lb.wait_status(0, "DOWN")
            assert closed_by_peer(conn)  # nothing sent: HAProxy itself closed it


@pytest.mark.parametrize("policy", [MemberDownPolicy.KEEP, MemberDownPolicy.CUT])
def test_http_a_stream_follows_the_policy_the_next_request_goes_elsewhere(
    members: Start, policy: MemberDownPolicy
) -> None:
    primary, backup = members(_http("primary")), members(_http("backup"))
    with running(ListenerProtocol.HTTP, policy, primary, backup) as lb:
        idle = http.client.HTTPConnection(VIP, lb.port, timeout=BOUND_S)
        assert name_over(idle) == "primary"
        with streaming(lb.port) as stream:
            primary.fail_checks()
            lb.wait_status(0, "DOWN")
            down = time.monotonic()
            if policy is MemberDownPolicy.KEEP:
                assert streamed_after(stream, down) == "primary"  # still streaming
            else:
                assert closed_by_peer(stream)
        assert name_over(idle) == "backup"  # the same client connection, another member
        idle.close()
