"""The access-log socket keeper across a SIGKILLed ``lbaas serve`` (issue 35), with a real
HAProxy amphora.

While serve is dead, the keeper still holds the amphora's log listener: HAProxy's ring
forwarder connects (the kernel's backlog completes it; nobody accepts) and waits instead
of reconnecting without pause. The restarted agent takes the listener back with the
queued connection and reads the lines logged meanwhile: N requests → exactly N lines.

The HAProxy's CPU ticks over the dead spell are printed beside those of a spell with the
keeper killed too (the forwarder spinning), as evidence; the test asserts the mechanism
(the socket accepts, the lines arrive, the keeper outlives serve), not the figures.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from lbaas.amphora.held_log_sockets import refuses
from lbaas.config import AccessLogSettings
from tests.e2e.amphora.access_log_lines import logged_services, only_request_lines
from tests.e2e.amphora.conftest import SHARED_SETTINGS, BackendFleet
from tests.e2e.amphora.serve_process import (
    haproxy_pids_under,
    keeper_pids_of,
    kill_and_restart,
    running_serve,
)
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, LoadBalancerUnderTest
from tests.e2e.amphora.traffic import request
from tests.support.process_cpu import cpu_ticks
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

UP, DOWN, UNKEPT, BACK = 5, 10, 4, 5
#: Seconds the HAProxy's CPU is sampled while no agent runs.
SPELL = 2.0
KEEPER_SETTINGS = {**SHARED_SETTINGS, "agent": {"log_socket_keeper": True}}


def _spell(pids: list[int]) -> int:
    before = cpu_ticks(pids)
    time.sleep(SPELL)
    return cpu_ticks(pids) - before


def _log_socket(state_dir: Path) -> Path:
    """The amphora's access-log socket (the tests run as root: the shared directory)."""
    (amphora,) = [d.name for d in (state_dir / "amphorae").iterdir() if d.is_dir()]
    return AccessLogSettings().socket_directory / f"{amphora}.sock"


def test_the_keeper_holds_the_log_socket_while_serve_is_dead(backends: BackendFleet) -> None:
    (one,) = backends.http("one")
    with running_serve(KEEPER_SETTINGS, prefix="lbk-") as serve:
        with serve.api() as api:
            body = api.create_loadbalancer(LOOPBACK_SUBNET_ID, name="access-log-keeper")
            lb = LoadBalancerUnderTest(api, body["id"], body["vip_address"], body)
            logged = logged_services(lb, serve.state_dir, [one], one)
        web, path = logged.web, _log_socket(serve.state_dir)
        for _ in range(UP):
            assert request(lb.vip, web.port, "/up").status == 200
        logged.new_lines(UP, 0)
        haproxies = haproxy_pids_under(serve.state_dir)
        (keeper,) = keeper_pids_of(serve.state_dir)

        with kill_and_restart(serve):
            assert keeper_pids_of(serve.state_dir) == [keeper]  # outlived serve's group
            assert not refuses(path)  # HAProxy's forwarder connects and waits
            for _ in range(DOWN):
                assert request(lb.vip, web.port, "/down").status == 200
            kept_ticks = _spell(haproxies)
        # The new agent took the listener back: the lines queued in it arrive (serve's API
        # answers before its agent has adopted: the keeper must not be killed before).
        logged.new_lines(UP + DOWN, 0)
        assert keeper_pids_of(serve.state_dir) == [keeper]  # the new agent attached to it

        with kill_and_restart(serve):  # the keeper too: the forwarder spins
            os.kill(keeper, signal.SIGKILL)
            wait_until(lambda: refuses(path), 10.0, "the socket to refuse")
            for _ in range(UNKEPT):
                assert request(lb.vip, web.port, "/unkept").status == 200
            unkept_ticks = _spell(haproxies)
        print(json.dumps({"cpu_ticks_in_2s": {"kept": kept_ticks, "unkept": unkept_ticks}}))
        for _ in range(BACK):
            assert request(lb.vip, web.port, "/back").status == 200

        new_web, _ = logged.new_lines(UP + DOWN + UNKEPT + BACK, 0)
        assert Counter((f[7], f[9]) for f in new_web) == {
            ("/up", "200"): UP,
            ("/down", "200"): DOWN,
            ("/unkept", "200"): UNKEPT,
            ("/back", "200"): BACK,
        }
        assert only_request_lines(logged.log_file, body["project_id"], lb.id)
