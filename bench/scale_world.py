"""The processes ``bench/scale.py`` measures, inside the network namespace it made.

One ``lbaas serve`` (API, health manager, its own loopback-mode agent for the amphora
provider; the converge worker as its child) on PostgreSQL, reached over the server's Unix
socket (the namespace has no route to the machine's 127.0.0.1:5432); one more ``lbaas
agent`` as the only node of the distributed provider, so its kernel tables and health
probes run in a process of their own as on a node; one backend process answering every
member on port 8000 of any 127.x address. HAProxy amphorae outlive serve (the agent starts
them in sessions of their own): ``close`` kills every one whose command line names the
state directory.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.certs.authority import CertificateAuthority  # noqa: E402
from tests.support.certificates import state_dir_sharing_ca  # noqa: E402
from tests.support.processes import lbaas_env  # noqa: E402

BACKEND_PORT = 8000
VIP_CIDR = "127.16.0.0/16"  # room for 10,000 VIPs and more
# Every member is 127.200.x.y:8000; one process bound to the wildcard answers them all:
# an HTTP 200 for the amphorae's HTTP monitors, a closed connection for TCP probes. Its
# arguments: other ports to answer on instead (the lab's router, ``bench/scale_lab.py``).
BACKEND = """
import asyncio, sys
async def one(reader, writer):
    try:
        await asyncio.wait_for(reader.read(512), 2)
        writer.write(b"HTTP/1.0 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok")
        await writer.drain()
    except Exception:
        pass
    writer.close()
async def main():
    ports = [int(p) for p in sys.argv[1:]] or [PORT]
    servers = [await asyncio.start_server(one, "0.0.0.0", p, backlog=1024) for p in ports]
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))
asyncio.run(main())
""".replace("PORT", str(BACKEND_PORT))


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def processes() -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            found.append((int(entry.name), ppid, cmdline))
    return found


def haproxies_under(state: Path) -> list[int]:
    """HAProxy processes whose command line names a file under ``state``."""
    return [p for p, _, cmd in processes() if "haproxy" in cmd and str(state) in cmd]


def kill_haproxies(state: Path) -> None:
    for pid in haproxies_under(state):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class ScaleWorld:
    state: Path
    database_url: str
    api_port: int = field(default_factory=free_port)
    serve_agent_port: int = field(default_factory=free_port)
    node_port: int = field(default_factory=free_port)
    health_port: int = field(default_factory=lambda: free_port(socket.SOCK_DGRAM))
    # One key for both: the node agent's heartbeats are then not refused as forged.
    heartbeat_key: str = field(default_factory=lambda: secrets.token_hex(16))
    serve: subprocess.Popen[bytes] | None = None
    node: subprocess.Popen[bytes] | None = None
    backend: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start(self) -> None:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        CertificateAuthority.load_or_create(self.state / "ca")
        self.backend = subprocess.Popen(
            [sys.executable, "-c", BACKEND], stdout=subprocess.PIPE, text=True
        )
        assert self.backend.stdout is not None and self.backend.stdout.readline() == "ready\n"
        settings = {
            "state_dir": str(state_dir_sharing_ca(self.state, "node")),
            "log_level": "WARNING",
            "agent": {"host": "127.0.0.1", "port": self.node_port},
            "health": self._health(),
        }
        self.node = self._spawn("node", ["agent"], settings)

    def _health(self) -> dict[str, Any]:
        return {"bind_host": "127.0.0.1", "bind_port": self.health_port,
                "heartbeat_key": self.heartbeat_key}  # fmt: skip

    def _spawn(self, name: str, argv: list[str], settings: dict[str, Any]) -> Any:
        with open(self.state / f"{name}.log", "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "lbaas.cli", *argv],
                env=lbaas_env(settings),
                stdout=log,
                stderr=log,
            )

    def serve_settings(self, resync_interval: float) -> dict[str, Any]:
        return {
            "state_dir": str(state_dir_sharing_ca(self.state, "serve")),
            "log_level": "WARNING",
            "database": {"url": self.database_url},
            "api": {"port": self.api_port},
            "agent": {"port": self.serve_agent_port},
            "health": self._health(),
            "providers": {
                "enabled": ["amphora", "distributed"],
                "distributed_use_hosts": False,
                "distributed_nodes": [f"https://127.0.0.1:{self.node_port}"],
            },
            "worker": {"resync_interval": resync_interval},
            "network": {"loopback_subnet_cidr": VIP_CIDR},
        }

    def start_serve(self, resync_interval: float = 60.0, timeout: float = 300) -> float:
        """Start serve; seconds until its API answers."""
        started = time.monotonic()
        self.serve = self._spawn("serve", ["serve"], self.serve_settings(resync_interval))
        while time.monotonic() - started < timeout:
            assert self.serve.poll() is None, f"serve exited: {self.log('serve')}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/", timeout=2).status_code == 200:
                    return time.monotonic() - started
            time.sleep(0.2)
        raise RuntimeError(f"serve did not answer: {self.log('serve')}")

    def stop_serve(self) -> None:
        if self.serve is not None and self.serve.poll() is None:
            self.serve.terminate()
            try:
                self.serve.wait(60)
            except subprocess.TimeoutExpired:
                self.serve.kill()
                self.serve.wait(10)
        self.serve = None

    def log(self, name: str) -> str:
        with contextlib.suppress(OSError):
            return (self.state / f"{name}.log").read_text(errors="replace")[-3000:]
        return ""

    def haproxy_pids(self) -> list[int]:
        return haproxies_under(self.state)

    def process_rss(self) -> dict[str, Any]:
        """RSS (MB) of serve, its worker child, the node agent, and the HAProxies."""
        figures: dict[str, Any] = {}
        if self.serve is not None:
            figures["serve_api_mb"] = rss_mb(self.serve.pid)
            figures["serve_worker_mb"] = sum(rss_mb(p) for p in self._workers())
        if self.node is not None:
            figures["node_agent_mb"] = rss_mb(self.node.pid)
        haproxies = [rss_mb(p) for p in self.haproxy_pids()]
        figures["haproxy_processes"] = len(haproxies)
        figures["haproxy_total_mb"] = round(sum(haproxies), 1)
        figures["haproxy_max_mb"] = max(haproxies, default=0.0)
        return figures

    def _workers(self) -> list[int]:
        """serve's worker child (its HAProxies are children too: left out)."""
        assert self.serve is not None
        serve = self.serve.pid
        return [p for p, ppid, cmd in processes() if ppid == serve and "lbaas.cli" in cmd]

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of serve with its worker child, of the node agent and of
        the HAProxies running now (all since each started)."""
        serve = 0.0
        if self.serve is not None:
            for pid in [self.serve.pid, *self._workers()]:
                with contextlib.suppress(OSError):
                    serve += cpu_seconds(pid)
        node = cpu_seconds(self.node.pid) if self.node is not None else 0.0
        haproxy = 0.0
        for pid in self.haproxy_pids():
            with contextlib.suppress(OSError):
                haproxy += cpu_seconds(pid)
        return {"serve_and_worker": serve, "node_agent": node, "haproxy": haproxy}

    def close(self) -> None:
        self.stop_serve()
        for proc in (self.node, self.backend):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        kill_haproxies(self.state)
