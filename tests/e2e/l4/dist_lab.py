"""Nodes, backends and a control plane, each in a namespace of the test, on one bridge.

    <p>-br  holds bridge br0; every other namespace has eth0 on it (one /24 the test picks)
    <p>-ctl .2    lbaas serve (API, worker, health manager, a loopback-mode agent for the
                  amphora provider); SQLite; the test reaches its API through api_relay.py
    <p>-n1  .11   lbaas agent: the node's L4 tables and health checker; also a client
    <p>-n2  .12   the same
    <p>-bI  .2I   backend I (l4_peers.py server: TCP and UDP on BACKEND_PORT)
    <p>-x1  .50   a client on no node (outside): reaches the VIP through the entry node

The distributed VIP (.100) is on no link: clients on the nodes reach it through their own
node's NAT output chain; the entry node holds it on ``lo`` for the outside client. All links live inside the test's namespaces and vanish
with them; ``close`` stops the processes (and any HAProxy the control plane started) and
deletes the namespaces and state directories even when the test failed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4_lab import PEERS, run

from lbaas.certs.authority import CertificateAuthority
from tests.e2e.amphora.serve_process import kill_haproxies_under
from tests.support.certificates import state_dir_sharing_ca
from tests.support.processes import lbaas_env
from tests.support.scratch_subnets import pick_subnets

RELAY = str(Path(__file__).with_name("api_relay.py"))
BACKEND_PORT = 8000
API_PORT = 9876
AGENT_PORT = 9443
NODES = ("n1", "n2")


@dataclass
class DistLab:
    backends: int = 3
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    namespaces: list[str] = field(default_factory=list)
    processes: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    state: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="dl-", dir="/tmp")))
    subnet: ipaddress.IPv4Network = field(default_factory=lambda: pick_subnets(1)[0])
    subnet_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    relay: subprocess.Popen[str] | None = None

    def ns(self, role: str) -> str:
        return f"dl{self.tag}-{role}"

    def address(self, role: str) -> str:
        host = {"ctl": 2, "n1": 11, "n2": 12, "x1": 50, "vip": 100}.get(role) or 20 + int(role[1:])
        return str(self.subnet[host])

    def build(self) -> None:
        self._namespace("br")
        run("ip", "-n", self.ns("br"), "link", "add", "br0", "type", "bridge")
        run("ip", "-n", self.ns("br"), "link", "set", "br0", "up")
        roles = ["ctl", *NODES, "x1", *(f"b{i}" for i in range(1, self.backends + 1))]
        for role in roles:
            self._namespace(role)
            run("ip", "link", "add", "eth0", "netns", self.ns(role), "type", "veth", "peer",
                "name", f"v-{role}", "netns", self.ns("br"))  # fmt: skip
            run("ip", "-n", self.ns("br"), "link", "set", f"v-{role}", "master", "br0", "up")
            run("ip", "-n", self.ns(role), "addr", "add",
                f"{self.address(role)}/{self.subnet.prefixlen}", "dev", "eth0")  # fmt: skip
            run("ip", "-n", self.ns(role), "link", "set", "eth0", "up")
        CertificateAuthority.load_or_create(self.state / "ca")
        for index in range(1, self.backends + 1):
            self.start_backend(index)

    def _namespace(self, role: str) -> None:
        run("ip", "netns", "add", self.ns(role))
        self.namespaces.append(self.ns(role))
        run("ip", "-n", self.ns(role), "link", "set", "lo", "up")

    def _spawn(self, name: str, role: str, argv: list[str], env: dict[str, str] | None) -> None:
        """Start ``argv`` in ``role``'s namespace; a backend's stdout is read, others' logged."""
        log = open(self.state / f"{name}.log", "a")  # noqa: SIM115 - closed below
        out = subprocess.PIPE if name.startswith("b") else log
        self.processes[name] = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(role), *argv], env=env, stdout=out,
            stderr=log, text=True, start_new_session=True,
        )  # fmt: skip
        log.close()

    def start_process(self, name: str, role: str, argv: list[str]) -> None:
        """Start ``argv`` in ``role``'s namespace, stopped by ``close`` (``bench/l4.py``'s
        HAProxy backends); ``name`` must not start with "b" (those are read, not logged)."""
        assert not name.startswith("b"), name
        self._spawn(name, role, argv, None)

    def start_backend(self, index: int) -> None:
        name = f"b{index}"
        self._spawn(name, name, [sys.executable, PEERS, "server", name, self.address(name),
                                 str(BACKEND_PORT)], None)  # fmt: skip
        out = self.processes[name].stdout
        assert out is not None and out.readline().strip() == "ready"

    def stop_backend(self, index: int) -> None:
        self._stop(f"b{index}")

    def start_control_plane(self) -> None:
        nodes = [f"https://{self.address(n)}:{AGENT_PORT}" for n in NODES]
        settings: dict[str, Any] = {
            "state_dir": str(state_dir_sharing_ca(self.state, "ctl")),
            "api": {"port": API_PORT},
            "providers": {"enabled": ["amphora", "distributed"], "distributed_nodes": nodes,
                          "distributed_status_interval": 0.5},
            "health": {"heartbeat_interval": 0.5, "stale_after": 15.0},
            "worker": {"poll_interval": 0.05, "backoff_base": 0.1, "backoff_max": 1.0,
                       "stop_timeout": 2.0},
            "network": {"subnets": [{"id": self.subnet_id, "network_id": str(uuid.uuid4()),
                                     "cidr": str(self.subnet), "name": f"dl-{self.tag}"}]},
        }  # fmt: skip
        argv = [sys.executable, "-m", "lbaas.cli", "serve"]
        self._spawn("ctl", "ctl", argv, lbaas_env(settings))
        self.relay = subprocess.Popen(
            ["ip", "netns", "exec", self.ns("ctl"), sys.executable, RELAY,
             f"http://127.0.0.1:{API_PORT}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, bufsize=1,
        )  # fmt: skip
        assert self.relay.stdout is not None and "ready" in self.relay.stdout.readline()
        deadline = time.monotonic() + 60
        while self._api_down():
            assert time.monotonic() < deadline, f"serve did not answer:\n{self.log('ctl')}"
            time.sleep(0.3)

    def _api_down(self) -> bool:
        assert self.processes["ctl"].poll() is None, f"serve exited:\n{self.log('ctl')}"
        try:
            return self.call("GET", "/")[0] != 200
        except (json.JSONDecodeError, KeyError):
            return True

    def start_agent(self, node: str) -> None:
        settings = {
            "state_dir": str(state_dir_sharing_ca(self.state, node)),
            "agent": {"host": self.address(node), "port": AGENT_PORT,
                      "l4_health_batch_delay": 0.1},
            "health": {"bind_host": self.address("ctl")},
        }  # fmt: skip
        self._spawn(node, node, [sys.executable, "-m", "lbaas.cli", "agent"], lbaas_env(settings))

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One API call through the relay: (status, JSON body)."""
        assert self.relay is not None and self.relay.stdin and self.relay.stdout
        self.relay.stdin.write(json.dumps({"method": method, "path": path, "body": body}) + "\n")
        line = self.relay.stdout.readline()
        if not line:
            raise json.JSONDecodeError("relay gone", "", 0)
        answer = json.loads(line)
        return answer["status"], answer["body"]

    def in_ns(self, role: str, *argv: str, timeout: float = 120) -> str:
        done = subprocess.run(["ip", "netns", "exec", self.ns(role), *argv],
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
        assert done.returncode == 0, f"{argv} in {role}: {done.stderr}"
        return done.stdout

    def names(self, role: str, protocol: str, address: str, port: int, count: int) -> list[str]:
        out = self.in_ns(role, sys.executable, PEERS, protocol, address, str(port), str(count))
        names: list[str] = json.loads(out)
        return names

    def log(self, name: str) -> str:
        try:
            return (self.state / f"{name}.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def _stop(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        if process.stdout is not None:
            process.stdout.close()

    def close(self) -> None:
        try:
            self._stop_all()
        finally:
            for namespace in reversed(self.namespaces):
                subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)
            self.namespaces.clear()
            shutil.rmtree(self.state, ignore_errors=True)

    def _stop_all(self) -> None:
        if self.relay is not None:
            self.relay.kill()
            self.relay.wait(10)
            for pipe in (self.relay.stdin, self.relay.stdout):
                if pipe is not None:
                    pipe.close()
        try:
            for process in self.processes.values():  # all at once: they stop in parallel
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGTERM)
            for name in list(self.processes):
                self._stop(name)
        finally:
            kill_haproxies_under(self.state / "ctl")
