"""Access logs across a reload: the replaced worker's requests keep their lines.

A reload soft-stops the old HAProxy worker, and its ring forwarder closes at that very
moment; requests the old worker still serves afterwards (one in flight on a keep-alive
connection, a TCP connection held open) are logged into its ring only. The agent reads
that ring through the session it holds the old worker with, so each of them still gives
exactly one line, also when it ends longer after the reload than the statistics alone
would hold the worker, and HAProxy's own messages from the stop ("Proxy ... stopped")
give none.
"""

from __future__ import annotations

import socket
import time
from collections import Counter
from pathlib import Path

import pytest

from lbaas.amphora.stats import HOLD_LIMIT
from lbaas.host.runtime_api import MasterCli, unix_socket_transport
from tests.e2e.amphora.access_log_lines import logged_services, only_request_lines
from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import loadbalancer
from tests.e2e.amphora.traffic import request, tcp_exchange
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

BEFORE, AFTER = 6, 5
TCP_BEFORE, TCP_AFTER = 3, 4


def _read_reply(sock: socket.socket) -> bytes:
    """One HTTP/1.1 reply whose body is the backend's name (no chunking from it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"connection closed mid-reply: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head.split(b"\r\n", 1)[0] + b" " + body


def _stopping(master: Path, pid: int) -> bool:
    """Worker ``pid`` was told to stop (its listeners are closed, its forwarder too)."""
    return "Stopping: 1" in unix_socket_transport(master)(f"@!{pid} show info; quit")


def test_requests_the_old_worker_serves_after_a_reload_give_one_line_each(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "access-log-reload") as lb:
        logged = logged_services(lb, serve.state_dir, [one], one)
        web, tcp = logged.web, logged.tcp

        for _ in range(BEFORE):
            assert request(lb.vip, web.port, "/before").status == 200
        for _ in range(TCP_BEFORE):
            assert b"200 OK" in tcp_exchange(lb.vip, tcp.port, b"GET / HTTP/1.0\r\n\r\n")
        # A keep-alive connection with one request answered and the next one half sent
        # (so the old worker does not close it as idle), and a TCP connection held open.
        kept = socket.create_connection((lb.vip, web.port), timeout=10)
        held_tcp = socket.create_connection((lb.vip, tcp.port), timeout=10)
        try:
            kept.sendall(b"GET /kept HTTP/1.1\r\nHost: lb\r\n\r\n")
            assert _read_reply(kept) == b"HTTP/1.1 200 OK one"
            kept.sendall(b"GET /across HTTP/1.1\r\nHost: lb\r\n")

            (amphora,) = api.amphorae(lb.id)
            master = serve.state_dir / "amphorae" / amphora["id"] / "master.sock"
            (worker,) = MasterCli.at(master).show_proc().current_workers
            web.add_member(two, "two")  # a configuration change: HAProxy reloads
            wait_until(lambda: _stopping(master, worker.pid), 30, "the old worker to stop")

            # Both are served by the replaced worker, after its forwarder closed.
            kept.sendall(b"\r\n")
            assert _read_reply(kept) == b"HTTP/1.1 200 OK one"
            time.sleep(HOLD_LIMIT + 1)  # longer than the statistics alone hold the worker
            held_tcp.sendall(b"GET / HTTP/1.0\r\n\r\n")
            answer = b""
            while chunk := held_tcp.recv(4096):
                answer += chunk
            assert b"200 OK" in answer
        finally:
            kept.close()
            held_tcp.close()
        for _ in range(AFTER):
            assert request(lb.vip, web.port, "/after").status == 200
        for _ in range(TCP_AFTER):
            assert b"200 OK" in tcp_exchange(lb.vip, tcp.port, b"GET / HTTP/1.0\r\n\r\n")

        new_web, new_tcp = logged.new_lines(BEFORE + 2 + AFTER, TCP_BEFORE + 1 + TCP_AFTER)
        seen = Counter((f[6].strip('"'), f[7], f[9]) for f in new_web)
        assert seen == {
            ("GET", "/before", "200"): BEFORE,
            ("GET", "/kept", "200"): 1,
            ("GET", "/across", "200"): 1,
            ("GET", "/after", "200"): AFTER,
        }
        assert len(new_tcp) == TCP_BEFORE + 1 + TCP_AFTER
        assert {(f[6], f[7]) for f in new_tcp} == {('"-"', "-")}
        assert only_request_lines(logged.log_file, lb.body["project_id"], lb.id)
