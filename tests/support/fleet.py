"""A fleet on one machine: a control plane and several loopback agents, as processes.

The control plane (``lbaas api``, ``lbaas worker`` and any number of ``lbaas health``)
shares one state directory (SQLite, the CA, the heartbeat key). Each agent is a host:
enrolled with ``lbaas agent enrol`` (its bundle in ``<host dir>/bundle``), then run as
``lbaas --config <bundle>/agent.toml agent`` with its own state directory and port, in
loopback mode (its VIPs are different addresses of 127.0.0.0/8). Used by
``tests/e2e/fleet`` and ``bench/host_loss.py``. Every process and HAProxy is killed when
the ``running_fleet`` block ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lbaas.compose import list_hosts
from lbaas.db.engine import Database
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import (
    _merged,
    free_port,
    kill_haproxies_under,
    kill_keepers_of,
    random_vip_subnet,
)
from tests.support.processes import lbaas_env, lbaas_process
from tests.support.waiting import wait_until

HEARTBEAT_INTERVAL = 0.5


@dataclass
class FleetHost:
    host_id: str
    port: int
    zone: str
    directory: Path
    stack: ExitStack = field(default_factory=ExitStack)
    process: subprocess.Popen[bytes] | None = None

    @property
    def bundle(self) -> Path:
        return self.directory / "bundle"

    @property
    def state_dir(self) -> Path:
        return self.directory / "state"


@dataclass
class Fleet:
    state_dir: Path
    settings: dict[str, Any]
    env: dict[str, str]
    hosts: dict[str, FleetHost]
    health: list[subprocess.Popen[bytes]]
    health_ports: list[int]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings['api']['port']}"

    def lbaas(self, *args: str) -> str:
        """Run one lbaas command against the control plane; its stdout."""
        done = subprocess.run(
            [sys.executable, "-m", "lbaas.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def host_list(self, *, cli: bool = False) -> dict[str, dict[str, Any]]:
        """The hosts registry: through ``lbaas host list --json``, or (cheaper) read from
        the database by the same function the command uses."""
        if cli:
            return {h["host_id"]: h for h in json.loads(self.lbaas("host", "list", "--json"))}
        database = Database(f"sqlite:///{self.state_dir / 'ctl' / 'lbaas.sqlite'}")
        try:
            return {h.host_id: asdict(h) for h in list_hosts(database)}
        finally:
            database.dispose()

    def start_agent(self, host: FleetHost) -> None:
        """Start (or restart) a host's agent from its bundle."""
        env = lbaas_env({"health": {"heartbeat_interval": HEARTBEAT_INTERVAL}})
        args = ["--config", str(host.bundle / "agent.toml"), "agent"]
        args += ["--state-dir", str(host.state_dir)]
        host.process = host.stack.enter_context(
            lbaas_process(args, env, host.directory / "agent.log")
        )

    def kill_host(self, host: FleetHost) -> None:
        """Lose the host: SIGKILL its agent, every HAProxy it started and its keeper."""
        if host.process is not None and host.process.poll() is None:
            os.killpg(host.process.pid, signal.SIGKILL)
            host.process.wait(10)
        kill_haproxies_under(host.state_dir)
        kill_keepers_of(host.state_dir)
        host.stack.close()
        host.stack = ExitStack()


def _enrol(fleet: Fleet, host: FleetHost) -> None:
    managers = ",".join(f"127.0.0.1:{port}" for port in fleet.health_ports)
    fleet.lbaas(
        "agent", "enrol", host.host_id,
        "--address", "127.0.0.1",
        "--agent-port", str(host.port),
        "--zone", host.zone,
        "--capacity", "50",
        "--health-manager", managers,
        "--out", str(host.bundle),
    )  # fmt: skip


@contextmanager
def running_fleet(
    zones: Sequence[str], *, health_managers: int = 2, extra: dict[str, Any] | None = None
) -> Iterator[Fleet]:
    """A control plane and one enrolled, running agent per entry of ``zones``."""
    if shutil.which("haproxy") is None:
        raise AssertionError("haproxy is not installed: the fleet tests need it")
    state = Path(tempfile.mkdtemp(prefix="lbfl-", dir="/tmp"))
    health_ports = [free_port(kind=socket.SOCK_DGRAM) for _ in range(health_managers)]
    base: dict[str, Any] = {
        "state_dir": str(state / "ctl"),
        "api": {"port": free_port()},
        "agent": {"port": free_port()},  # no agent there: every amphora goes to a host
        "health": {
            "heartbeat_interval": HEARTBEAT_INTERVAL,
            "stale_after": 3.0,
            "host_stale_after": 3.0,
            # Every host here is an agent on this machine's loopback, so a "lost" host's
            # port is refused by the one kernel they share, as a restarting agent's is:
            # the kernel's answer cannot tell them apart, and a killed host must be lost.
            "agent_restart_grace": 0.0,
        },
        "worker": {"poll_interval": 0.05, "backoff_base": 0.1, "backoff_max": 1.0},
        "network": {"loopback_subnet_cidr": random_vip_subnet()},
    }
    settings = _merged(base, extra or {})
    env = lbaas_env(settings)
    fleet = Fleet(state, settings, env, {}, [], health_ports)
    with ExitStack() as stack:
        try:
            fleet.lbaas("db", "upgrade")
            for index, zone in enumerate(zones):
                host = FleetHost(f"host-{index}", free_port(), zone, state / f"host-{index}")
                host.directory.mkdir()
                fleet.hosts[host.host_id] = host
                _enrol(fleet, host)
            for port in health_ports:
                henv = lbaas_env({**settings, "health": {**settings["health"], "bind_port": port}})
                log = state / f"health-{port}.log"
                fleet.health.append(stack.enter_context(lbaas_process(["health"], henv, log)))
            for name in ("worker", "api"):
                stack.enter_context(lbaas_process([name], env, state / f"{name}.log"))
            for host in fleet.hosts.values():
                fleet.start_agent(host)
            wait_until(lambda: _api_up(fleet.url), 60, "the API to answer")
            wait_until(
                lambda: all(h["status"] == "UP" for h in fleet.host_list().values()),
                60,
                "every host to heartbeat",
            )
            yield fleet
        finally:
            for host in fleet.hosts.values():
                fleet.kill_host(host)
            shutil.rmtree(state, ignore_errors=True)


def _api_up(url: str) -> bool:
    try:
        with OctaviaApi(url, timeout=1) as api:
            api.get("/")
        return True
    except Exception:  # noqa: BLE001 - not up yet, whatever the reason
        return False


def curl_status(vip: str, port: int) -> int:
    """The HTTP status curl gets through a VIP (0: nothing answered)."""
    assert vip.startswith("127."), vip  # traffic from tests stays on loopback
    done = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "2", f"http://{vip}:{port}/"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return int(done.stdout or 0)
