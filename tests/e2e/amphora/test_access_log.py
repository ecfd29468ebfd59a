"""Access logs on by default: N requests (or TCP connections) → exactly N lines.

Through the shared ``lbaas serve`` (default settings: connection logging on), the agent
writes ``<state_dir>/access-logs/<load balancer id>.log``. Each line starts with the
project, load balancer and listener ids and, for HTTP, carries the request line and the
status; the member field names the member that answered.
"""

from __future__ import annotations

import http.client
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import request, tcp_exchange, wait_serving

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

GETS = 40
KEEPALIVE_GETS = 20
POSTS = 7
TCP_CONNECTIONS = 15


def _lines(path: Path, listener_id: str) -> list[list[str]]:
    if not path.exists():
        return []
    fields = (line.split(" ") for line in path.read_text().splitlines())
    return [f for f in fields if len(f) > 2 and f[2] == listener_id]


def _wait_lines(path: Path, listener_id: str, count: int) -> list[list[str]]:
    """The listener's lines once ``count`` have arrived and no more come for a moment."""
    deadline = time.monotonic() + 30
    while len(_lines(path, listener_id)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # a line too many would arrive now
    return _lines(path, listener_id)


def test_every_http_request_and_tcp_connection_gives_one_line(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "access-log") as lb:
        web = http_service(lb, [one, two])
        tcp = http_service(lb, [one], protocol="TCP")
        wait_serving(lb.vip, web.port)
        wait_serving(lb.vip, tcp.port)
        log_file = serve.state_dir / "access-logs" / f"{lb.id}.log"
        # Traffic of the readiness probes is logged too: count from what is there now.
        before_web = len(_wait_lines(log_file, web.listener["id"], 1))
        before_tcp = len(_wait_lines(log_file, tcp.listener["id"], 1))

        for _ in range(GETS):
            assert request(lb.vip, web.port, "/x?q=1").status == 200
        for _ in range(POSTS):
            assert request(lb.vip, web.port, "/form", method="POST").status == 501
        conn = http.client.HTTPConnection(lb.vip, web.port, timeout=10)
        for _ in range(KEEPALIVE_GETS):  # one connection, one line per request
            conn.request("GET", "/kept")
            assert conn.getresponse().read() in (b"one", b"two")
        conn.close()
        for _ in range(TCP_CONNECTIONS):
            assert b"200 OK" in tcp_exchange(lb.vip, tcp.port, b"GET / HTTP/1.0\r\n\r\n")

        web_lines = _wait_lines(log_file, web.listener["id"], before_web + GETS + POSTS + 20)
        tcp_lines = _wait_lines(log_file, tcp.listener["id"], before_tcp + TCP_CONNECTIONS)
        new_web = web_lines[before_web:]
        new_tcp = tcp_lines[before_tcp:]
        assert len(new_web) == GETS + POSTS + KEEPALIVE_GETS
        assert len(new_tcp) == TCP_CONNECTIONS

        project = lb.body["project_id"]
        for fields in new_web + new_tcp:
            assert fields[0] == project and fields[1] == lb.id, fields
        # Request line and status: fields 6-8 are "METHOD URL HTTP/1.1" then the status.
        seen = Counter((f[6].strip('"'), f[7], f[9]) for f in new_web)
        assert seen == {
            ("GET", "/x?q=1", "200"): GETS,
            ("POST", "/form", "501"): POSTS,
            ("GET", "/kept", "200"): KEEPALIVE_GETS,
        }
        members = {f"srv_{m['id']}" for m in web.members.values()}
        assert {f[-3] for f in new_web} == members  # both members answered
        assert {(f[6], f[7]) for f in new_tcp} == {('"-"', "-")}
        assert {f[-3] for f in new_tcp} == {f"srv_{tcp.members['one']['id']}"}
