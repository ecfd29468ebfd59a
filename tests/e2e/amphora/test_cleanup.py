"""``lbaas cleanup``: what a SIGKILLed ``lbaas serve`` left serving is stopped.

By design HAProxy outlives ``lbaas serve`` (a restart adopts it and drops nothing), and
so does the access-log socket keeper; after a final stop, ``lbaas cleanup`` on the state
directory stops every HAProxy of it and its keeper, and the VIP's port closes. While a serve owns the directory, cleanup refuses in one line.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.e2e.amphora.conftest import SHARED_SETTINGS
from tests.e2e.amphora.serve_process import (
    STOP_TIMEOUT,
    ServeInstance,
    haproxy_pids_under,
    keeper_pids_of,
    running_serve,
)
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.support.processes import lbaas_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


def _cleanup(serve: ServeInstance) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "cleanup"],
        env=lbaas_env(serve.settings),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2):
            return True
    except OSError:
        return False


def test_cleanup_stops_the_haproxies_a_killed_serve_left_serving() -> None:
    settings = {**SHARED_SETTINGS, "agent": {"log_socket_keeper": True}}
    with running_serve(settings, prefix="lbc-") as serve:
        refused = _cleanup(serve)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert refused.stderr.strip() == (
            f"lbaas: state directory {serve.state_dir} is in use by pid {serve.process.pid} "
            "(lbaas serve): stop it first, or pass another --state-dir"
        )
        with serve.api() as api:
            lb = api.create_loadbalancer(LOOPBACK_SUBNET_ID, name="left-serving")
            vip = lb["vip_address"]
            port = free_port_on(vip)
            api.create_listener(lb["id"], "HTTP", port)
        wait_until(lambda: _accepts(vip, port), 60, "HAProxy to listen on the VIP")
        assert haproxy_pids_under(serve.state_dir)

        os.killpg(serve.process.pid, signal.SIGKILL)
        serve.process.wait(STOP_TIMEOUT)
        assert _accepts(vip, port)  # by design: HAProxy serves on without lbaas serve
        left = haproxy_pids_under(serve.state_dir)
        assert left
        keepers = keeper_pids_of(serve.state_dir)
        assert len(keepers) == 1  # holding the access-log socket for the next serve

        done = _cleanup(serve)
        assert done.returncode == 0, done.stderr
        stopped = len(left) + len(keepers)
        assert done.stdout.startswith(f"stopped {stopped} process(es) of {serve.state_dir}: ")
        assert haproxy_pids_under(serve.state_dir) == []
        assert keeper_pids_of(serve.state_dir) == []
        assert not _accepts(vip, port)
        again = _cleanup(serve)  # nothing left: still fine, and says so
        assert (again.returncode, again.stdout.strip()) == (
            0,
            f"nothing of {serve.state_dir} was running",
        )
