"""A real Octavia (from PyPI, in the OpenStack environment): its API and its driver agent,
on a fresh MariaDB database, with the lbaas provider drivers enabled beside Octavia's noop
and amphora drivers. Started by the tests that need it, and everything stopped and removed after,
whatever happened.

Octavia's own drivers (compute, network, amphora) are its no-op ones: there is no Nova or
Neutron here. Octavia's API is ``octavia-api`` (its simple WSGI server) on a free loopback
port in ``noauth`` mode; the driver agent's unix sockets live in a short temporary
directory (their paths must fit 107 bytes). No RabbitMQ: neither the API with provider
drivers nor the driver agent sends RPC. Only with ``worker`` (``bench/octavia_provider.py``)
does Octavia's own ``amphora`` provider work: its API casts to ``octavia-worker`` over the
machine's RabbitMQ, and the worker's flows run against the no-op drivers.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.openstack_venv import openstack_command
from tests.support.waiting import wait_until

PROVIDER = str(Path(__file__).resolve().parents[2] / "octavia-provider")
RABBITMQ = "rabbit://guest:guest@127.0.0.1:5672/"
MARIADB = ["mysql", "-uroot", "-h127.0.0.1", "-P3306"]
START_TIMEOUT = 90.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Octavia:
    url: str
    directory: Path
    config: Path
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]]

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def start(self, name: str) -> subprocess.Popen[bytes]:
        """Start ``octavia-api`` or ``octavia-driver-agent`` (again) on this config."""
        log = open(self.directory / f"{name}.log", "ab")  # noqa: SIM115 - the child holds it
        try:
            process = subprocess.Popen(
                [openstack_command(name), "--config-file", str(self.config)],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        self.processes[name] = process
        return process

    def kill(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        if process is not None:
            process.wait(10)


@contextmanager
def mariadb_database() -> Iterator[str]:
    """A new, empty database ``octavia_<random>``; dropped at the end."""
    name = f"octavia_{secrets.token_hex(6)}"
    subprocess.run([*MARIADB, "-e", f"CREATE DATABASE {name}"], check=True, timeout=30)
    try:
        yield f"mysql+pymysql://root@127.0.0.1:3306/{name}"
    finally:
        subprocess.run([*MARIADB, "-e", f"DROP DATABASE IF EXISTS {name}"], timeout=30)


def _config(directory: Path, database: str, port: int) -> str:
    return f"""[DEFAULT]
debug = False
use_stderr = True
transport_url = {RABBITMQ}

[api_settings]
bind_host = 127.0.0.1
bind_port = {port}
auth_strategy = noauth
enabled_provider_drivers = lbaas:lbaas amphorae,lbaas-distributed:lbaas kernel L4,noop_driver:Octavia no-op,amphora:Octavia amphorae
default_provider_driver = lbaas

[database]
connection = {database}

[driver_agent]
status_socket_path = {directory}/status.sock
stats_socket_path = {directory}/stats.sock
get_socket_path = {directory}/get.sock
enabled_provider_agents = lbaas

[controller_worker]
network_driver = network_noop_driver
compute_driver = compute_noop_driver
amphora_driver = amphora_noop_driver
# Written only with a worker (_worker_config), which reads it.
client_ca = {directory}/ca.pem
"""


def _worker_config(directory: Path) -> str:
    """What Octavia's own amphora provider needs on top: RabbitMQ (a topic of this run's
    own, so no other Octavia's worker takes its casts) and a CA for the amphorae's
    certificates, which its create flow signs even when the amphorae are no-op ones."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=octavia-test-ca", "-keyout", str(directory / "ca.key"),
         "-out", str(directory / "ca.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return f"""
[oslo_messaging]
topic = octavia_prov_{secrets.token_hex(4)}

[certificates]
ca_certificate = {directory}/ca.pem
ca_private_key = {directory}/ca.key
"""


def _provider_config(lbaas_url: str) -> str:
    return f"""[lbaas]
url = {lbaas_url}
retry_seconds = 20
poll_interval = 0.5
full_push_interval = 5
"""


@contextmanager
def running_octavia(lbaas_url: str, worker: bool = False) -> Iterator[Octavia]:
    """Octavia's API and driver agent, talking to the lbaas API at ``lbaas_url``;
    ``worker``: ``octavia-worker`` too (the machine's RabbitMQ), so that Octavia's own
    ``amphora`` provider, with no-op compute, network and amphora drivers, reaches ACTIVE."""
    directory = Path(tempfile.mkdtemp(prefix="oct-", dir="/tmp"))
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, directory, True)
        database = stack.enter_context(mariadb_database())
        port = _free_port()
        config = directory / "octavia.conf"
        config.write_text(
            _config(directory, database, port) + (_worker_config(directory) if worker else "")
        )
        (directory / "lbaas-provider.ini").write_text(_provider_config(lbaas_url))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LBAAS_", "OS_"))}
        env["OCTAVIA_LBAAS_PROVIDER_CONFIG"] = str(directory / "lbaas-provider.ini")
        # This checkout's driver before the one installed (editable, perhaps from another
        # worktree of the same repository): the entry points' names are the same.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [PROVIDER, env.get("PYTHONPATH")]))
        subprocess.run(
            [
                openstack_command("octavia-db-manage"),
                "--config-file",
                str(config),
                "upgrade",
                "head",
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        octavia = Octavia(f"http://127.0.0.1:{port}", directory, config, env, {})
        stack.callback(lambda: [octavia.kill(n) for n in list(octavia.processes)])
        octavia.start("octavia-driver-agent")
        if worker:
            octavia.start("octavia-worker")
            wait_until(
                lambda: "Starting V2 consumer" in octavia.log_tail("octavia-worker", 100000),
                START_TIMEOUT,
                "octavia-worker's consumer (a cast before it listens would be lost)",
            )
        octavia.start("octavia-api")
        wait_until(lambda: _answers(octavia), START_TIMEOUT, "Octavia's API to answer")
        wait_until(
            lambda: (directory / "status.sock").exists(),
            START_TIMEOUT,
            "Octavia's driver agent sockets",
        )
        yield octavia


def _answers(octavia: Octavia) -> bool:
    for name, process in octavia.processes.items():
        if process.poll() is not None:
            raise AssertionError(f"{name} exited:\n{octavia.log_tail(name)}")
    try:
        return httpx.get(octavia.url + "/", timeout=1).status_code < 500
    except httpx.HTTPError:
        return False
