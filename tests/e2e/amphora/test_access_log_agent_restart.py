"""Access logs across an agent restart: lines logged while the agent is down arrive later.

``lbaas serve`` (API, controller and agent) is killed with SIGKILL while HAProxy serves on;
the requests served meanwhile are logged into the worker's ring, whose forwarder finds no
one listening and retries. The restarted agent binds the socket again, the forwarder
reconnects and delivers them: N requests → exactly N lines, none twice.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.e2e.amphora.access_log_lines import logged_services, only_request_lines
from tests.e2e.amphora.conftest import SHARED_SETTINGS, BackendFleet
from tests.e2e.amphora.serve_process import kill_and_restart, running_serve
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, LoadBalancerUnderTest
from tests.e2e.amphora.traffic import request, tcp_exchange

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

UP, DOWN, BACK = 8, 12, 6
TCP_DOWN = 5


def test_lines_logged_while_the_agent_is_down_are_delivered_after_its_restart(
    backends: BackendFleet,
) -> None:
    (one,) = backends.http("one")
    with running_serve(SHARED_SETTINGS, prefix="lbr-") as serve:
        with serve.api() as api:
            body = api.create_loadbalancer(LOOPBACK_SUBNET_ID, name="access-log-restart")
            lb = LoadBalancerUnderTest(api, body["id"], body["vip_address"], body)
            logged = logged_services(lb, serve.state_dir, [one], one)
        web, tcp = logged.web, logged.tcp
        for _ in range(UP):
            assert request(lb.vip, web.port, "/up").status == 200
        logged.new_lines(UP, 0)  # delivered before the kill
        with kill_and_restart(serve):
            for _ in range(DOWN):  # HAProxy serves on; its ring keeps the lines
                assert request(lb.vip, web.port, "/down").status == 200
            for _ in range(TCP_DOWN):
                assert b"200 OK" in tcp_exchange(lb.vip, tcp.port, b"GET / HTTP/1.0\r\n\r\n")
        for _ in range(BACK):
            assert request(lb.vip, web.port, "/back").status == 200

        new_web, new_tcp = logged.new_lines(UP + DOWN + BACK, TCP_DOWN)
        assert Counter((f[6].strip('"'), f[7], f[9]) for f in new_web) == {
            ("GET", "/up", "200"): UP,
            ("GET", "/down", "200"): DOWN,
            ("GET", "/back", "200"): BACK,
        }
        assert len(new_tcp) == TCP_DOWN
        assert only_request_lines(logged.log_file, body["project_id"], lb.id)
