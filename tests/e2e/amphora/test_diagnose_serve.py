"""``lbaas diagnose`` against a real ``lbaas serve``: with a real agent and HAProxy every
hop passes; a member whose backend is stopped is named, with why (HAProxy's check status);
a stray process listening on the VIP:port beside the amphora's HAProxy (as a HAProxy left
by an earlier ``lbaas serve`` does, through ``SO_REUSEPORT``) fails the vip hop, named.

A killed HAProxy is not driven here: the agent's supervisor restarts it faster than the
command starts (killing it again and again for 20 s never caught it down); ``tests/unit/diagnose`` checks the
verdict on the agent's answer for a stopped HAProxy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance, diagnose
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import wait_serving
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

#: A listener on the VIP:port beside HAProxy's, as a HAProxy of an earlier agent would be.
STRAY = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen()
print("listening", flush=True)
sys.stdin.read()  # until the test kills it
"""

MONITOR = {
    "type": "HTTP",
    "delay": 2,
    "timeout": 2,
    "max_retries": 1,
    "max_retries_down": 2,
    "url_path": "/",
    "expected_codes": "200",
}


def test_diagnose_a_real_data_plane(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet, tmp_path: Path
) -> None:
    up, flaky = backends.http("up", "flaky")
    with loadbalancer(api, "diagnose") as lb:
        service = http_service(lb, [up, flaky])
        api.create_healthmonitor(lb.id, service.pool["id"], **MONITOR)
        for name in ("up", "flaky"):
            wait_until(
                lambda name=name: service.member_status(name) == "ONLINE",  # type: ignore[misc]
                30.0,
                f"member {name} ONLINE",
            )
        wait_serving(service.vip, service.port)
        well = diagnose(serve, lb.id)
        assert well.returncode == 0, well.stdout + well.stderr
        assert "[  ok] haproxy" in well.stdout and "running, pid" in well.stdout
        assert "[  ok] agent" in well.stdout
        assert f"{service.vip}:{service.port}: answers" in well.stdout
        assert "answers now" in well.stdout  # the agent's connect, made when asked

        script = tmp_path / "stray-vip-listener.py"
        script.write_text(STRAY)
        stray = subprocess.Popen(
            [sys.executable, str(script), service.vip, str(service.port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert stray.stdout is not None and stray.stdout.readline() == "listening\n"
            split = diagnose(serve, lb.id)
        finally:
            stray.kill()
            stray.communicate()
        assert split.returncode == 1, split.stdout + split.stderr
        assert "verdict: broken at the vip hop" in split.stdout, split.stdout
        assert f"also listened on by pid {stray.pid} (" in split.stdout, split.stdout
        assert "stray-vip-listener" in split.stdout

        flaky.stop()
        wait_until(lambda: service.member_status("flaky") == "ERROR", 30.0, "member ERROR")
        sick = diagnose(serve, lb.id)
        assert sick.returncode == 1, sick.stdout + sick.stderr
        flaky_id = service.members["flaky"]["id"]
        assert "verdict: broken at the members hop" in sick.stdout, sick.stdout
        assert flaky_id in sick.stdout and "failing its health check" in sick.stdout
        assert "HAProxy on amphora" in sick.stdout and "DOWN, last check L4CON" in sick.stdout
        assert "Connection refused" in sick.stdout, sick.stdout
