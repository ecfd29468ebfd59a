"""Access logs on by default: N requests (or TCP connections) → exactly N lines.

Through the shared ``lbaas serve`` (default settings: connection logging on), the agent
writes ``<state_dir>/access-logs/<load balancer id>.log``. Each line starts with the
project, load balancer and listener ids and, for HTTP, carries the request line and the
status; the member field names the member that answered.
"""

from __future__ import annotations

import http.client
import ipaddress
from collections import Counter

import pytest

from tests.e2e.amphora.access_log_lines import logged_services
from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import loadbalancer
from tests.e2e.amphora.traffic import request, tcp_exchange

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

GETS = 40
KEEPALIVE_GETS = 20
POSTS = 7
TCP_CONNECTIONS = 15
#: The keep-alive client's own source address (all of 127.0.0.0/8 is local).
KEEPALIVE_CLIENT = "127.0.0.9"


def test_every_http_request_and_tcp_connection_gives_one_line(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "access-log") as lb:
        logged = logged_services(lb, serve.state_dir, [one, two], one)
        web, tcp = logged.web, logged.tcp

        for _ in range(GETS):
            assert request(lb.vip, web.port, "/x?q=1").status == 200
        for _ in range(POSTS):
            assert request(lb.vip, web.port, "/form", method="POST").status == 501
        # From an address of its own: the line's client field must be that dotted quad.
        conn = http.client.HTTPConnection(
            lb.vip, web.port, timeout=10, source_address=(KEEPALIVE_CLIENT, 0)
        )
        for _ in range(KEEPALIVE_GETS):  # one connection, one line per request
            conn.request("GET", "/kept")
            assert conn.getresponse().read() in (b"one", b"two")
        conn.close()
        for _ in range(TCP_CONNECTIONS):
            assert b"200 OK" in tcp_exchange(lb.vip, tcp.port, b"GET / HTTP/1.0\r\n\r\n")

        new_web, new_tcp = logged.new_lines(GETS + POSTS + KEEPALIVE_GETS, TCP_CONNECTIONS)
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
        kept = [f for f in new_web if f[7] == "/kept"]
        assert {f[3] for f in kept} == {KEEPALIVE_CLIENT}, kept[0]
        assert len({f[4] for f in kept}) == 1 and int(kept[0][4]) > 0  # one client port
        assert all(str(ipaddress.IPv4Address(f[3])) == f[3] for f in new_web + new_tcp)
        members = {f"srv_{m['id']}" for m in web.members.values()}
        assert {f[-3] for f in new_web} == members  # both members answered
        assert {(f[6], f[7]) for f in new_tcp} == {('"-"', "-")}
        # No TLS here: the client-certificate fields read as HAProxy writes a failed fetch.
        assert {(f[-6], f[-5]) for f in new_web + new_tcp} == {("-", '""')}
        assert {f[-3] for f in new_tcp} == {f"srv_{tcp.members['one']['id']}"}
