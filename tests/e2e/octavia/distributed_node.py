"""lbaas's distributed provider on one node: a network namespace of the test holding
``lbaas serve`` (amphora and distributed providers, SQLite), one ``lbaas agent`` as the
provider's only node (its nftables tables are this namespace's), and the backends, as
``bench/scale_world.py`` runs them, plus a forwarded port so that Octavia's processes and
the CLI on the host reach serve's API.

Everything lives on the namespace's own loopback: the VIP subnet and the members are
127.x addresses there, and clients run in the namespace too (a distributed VIP is served
to the node's own clients by its NAT output chain). ``close`` stops every process and
deletes the namespace and the state directory, whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from lbaas.certs.authority import CertificateAuthority
from tests.e2e.amphora.serve_process import kill_haproxies_under
from tests.support.certificates import state_dir_sharing_ca
from tests.support.netns_port import forwarded_port
from tests.support.processes import lbaas_env, stop_group
from tests.support.waiting import wait_until

PEERS = str(Path(__file__).parents[1] / "l4" / "l4_peers.py")
API_PORT = 9876
SERVE_AGENT_PORT = 9443
NODE_PORT = 9444
HEALTH_PORT = 5555
VIP_SUBNET = "127.16.0.0/24"
BACKEND_PORT = 8000


@dataclass
class DistributedNode:
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    state: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="lod-", dir="/tmp")))
    processes: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    url: str = ""  # serve's API as the host reaches it (the forwarded port)
    made_namespace: bool = False

    @property
    def namespace(self) -> str:
        return f"lod{self.tag}"

    def backend_address(self, index: int) -> str:
        return f"127.200.0.{index}"

    def build(self) -> None:
        subprocess.run(["ip", "netns", "add", self.namespace], check=True, timeout=30)
        self.made_namespace = True
        subprocess.run(["ip", "-n", self.namespace, "link", "set", "lo", "up"], check=True)
        CertificateAuthority.load_or_create(self.state / "ca")

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        """``argv`` in the namespace, in a session of its own; a backend's stdout is read
        (it says when it listens), the others' output logged."""
        log = open(self.state / f"{name}.log", "a")  # noqa: SIM115 - closed below
        backend = name.startswith("backend")
        self.processes[name] = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, *argv],
            env=env,
            stdout=subprocess.PIPE if backend else log,
            stderr=log,
            text=True,
            start_new_session=True,
        )
        log.close()

    def start_backend(self, index: int) -> None:
        """A TCP (and UDP) server greeting every connection with ``b<index>``."""
        name = f"backend{index}"
        address = self.backend_address(index)
        self._spawn(name, [sys.executable, PEERS, "server", f"b{index}", address,
                           str(BACKEND_PORT)])  # fmt: skip
        out = self.processes[name].stdout
        assert out is not None and out.readline().strip() == "ready", self.log(name)

    def stop_backend(self, index: int) -> None:
        self._stop(f"backend{index}")

    def start_lbaas(self) -> None:
        """The node agent, then serve; returns once serve's API answers in the namespace."""
        health = {"bind_host": "127.0.0.1", "bind_port": HEALTH_PORT,
                  "heartbeat_key": uuid.uuid4().hex}  # fmt: skip
        node = {
            "state_dir": str(state_dir_sharing_ca(self.state, "node")),
            "agent": {"host": "127.0.0.1", "port": NODE_PORT, "l4_health_batch_delay": 0.1},
            "health": health,
        }
        self._spawn("node", [sys.executable, "-m", "lbaas.cli", "agent"], lbaas_env(node))
        serve = {
            "state_dir": str(state_dir_sharing_ca(self.state, "serve")),
            "api": {"port": API_PORT},
            "agent": {"port": SERVE_AGENT_PORT},
            "health": {**health, "heartbeat_interval": 0.5, "stale_after": 15.0},
            "providers": {
                "enabled": ["amphora", "distributed"],
                "distributed_use_hosts": False,
                "distributed_nodes": [f"https://127.0.0.1:{NODE_PORT}"],
                "distributed_status_interval": 0.5,
            },
            "worker": {"poll_interval": 0.05, "backoff_base": 0.1, "backoff_max": 1.0},
            "network": {"loopback_subnet_cidr": VIP_SUBNET},
        }
        self._spawn("serve", [sys.executable, "-m", "lbaas.cli", "serve"], lbaas_env(serve))

    def wait_answering(self, timeout: float = 90) -> None:
        def answers() -> bool:
            for name in ("serve", "node"):
                process = self.processes[name]
                assert process.poll() is None, f"{name} exited:\n{self.log(name)}"
            try:
                return httpx.get(self.url + "/", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(answers, timeout, "lbaas serve in the namespace to answer")

    def in_ns(self, *argv: str, timeout: float = 60) -> str:
        done = subprocess.run(["ip", "netns", "exec", self.namespace, *argv],
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
        assert done.returncode == 0, f"{argv}: {done.stderr}"
        return done.stdout

    def names(self, vip: str, port: int, count: int) -> list[str]:
        """``count`` new TCP connections to the VIP from the node; each member's greeting."""
        out = self.in_ns(sys.executable, PEERS, "tcp", vip, str(port), str(count))
        names: list[str] = json.loads(out)
        return names

    def nft_chains(self) -> list[str]:
        """The chains of the L4 engine's table (``lb_<key>``: one per load balancer)."""
        listed: Any = json.loads(self.in_ns("nft", "-j", "list", "chains", "ip"))
        return [item["chain"]["name"] for item in listed["nftables"] if "chain" in item]

    def log(self, name: str) -> str:
        with contextlib.suppress(OSError):
            return (self.state / f"{name}.log").read_text(errors="replace")[-3000:]
        return ""

    def _stop(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None and process.poll() is None:
            stop_group(process)  # SIGTERM to its session, SIGKILL after 10 s
        if process is not None and process.stdout is not None:
            process.stdout.close()

    def close(self) -> None:
        try:
            for name in list(self.processes):
                self._stop(name)
            kill_haproxies_under(self.state)
        finally:
            if self.made_namespace:
                subprocess.run(["ip", "netns", "delete", self.namespace], check=False,
                               timeout=30)  # fmt: skip
            shutil.rmtree(self.state, ignore_errors=True)


@contextmanager
def distributed_node(backends: int = 2) -> Iterator[DistributedNode]:
    """A built and running node (serve answering on ``node.url``); removed after."""
    node = DistributedNode()
    with ExitStack() as stack:
        stack.callback(node.close)
        node.build()
        for index in range(1, backends + 1):
            node.start_backend(index)
        port = stack.enter_context(forwarded_port(node.namespace, API_PORT))
        node.url = f"http://127.0.0.1:{port}"
        node.start_lbaas()
        node.wait_answering()
        yield node
