"""Processes for the data-plane benchmark: backend and hand-written HAProxy, `lbaas serve`.

Everything binds to 127.0.0.0/8 only. HAProxy binds with SO_REUSEPORT, so two HAProxy
processes on this machine may silently share an address and port; to keep other runs (and
other sessions' tests) out of our figures, every run picks its own random /24 inside
127.0.0.0/8 for lbaas VIPs, the hand-written load balancer and the backends, and asks the
kernel for free ports.

Used by ``bench/dataplane.py``; not a library.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

HAPROXY = os.environ.get("LBAAS_BENCH_HAPROXY", "haproxy")


def free_port(kind: int = socket.SOCK_STREAM, host: str = "127.0.0.1") -> int:
    """A port the kernel says is free now (TCP by default, ``socket.SOCK_DGRAM`` for UDP)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class AddressPlan:
    """The loopback addresses of one run: ``127.A.B.0/24`` VIPs, ``127.A.B+1.x`` the rest."""

    vip_subnet_cidr: str
    handwritten_address: str
    backend_address: str

    @classmethod
    def random(cls) -> AddressPlan:
        a = random.randint(100, 250)
        b = random.randrange(0, 254, 2)
        return cls(
            vip_subnet_cidr=f"127.{a}.{b}.0/24",
            handwritten_address=f"127.{a}.{b + 1}.10",
            backend_address=f"127.{a}.{b + 1}.20",
        )


def haproxy_version() -> str:
    done = subprocess.run([HAPROXY, "-v"], capture_output=True, text=True, check=False)
    words = done.stdout.split()
    return words[2] if len(words) > 2 else "unknown"


class HaproxyProcess:
    """One HAProxy in master-worker mode, in the foreground, in its own session."""

    def __init__(self, name: str, config: str, workdir: Path) -> None:
        self.name = name
        self.config_path = workdir / f"{name}.cfg"
        self.log_path = workdir / f"{name}.log"
        self.config_path.write_text(config)
        self.proc: subprocess.Popen[bytes] | None = None

    def check_ms(self) -> float:
        """Milliseconds ``haproxy -c`` takes on this configuration."""
        start = time.perf_counter()
        subprocess.run(
            [HAPROXY, "-c", "-q", "-f", str(self.config_path)], capture_output=True, check=True
        )
        return (time.perf_counter() - start) * 1000

    def start(self, wait_for: Sequence[tuple[str, int]]) -> None:
        subprocess.run(
            [HAPROXY, "-c", "-q", "-f", str(self.config_path)], capture_output=True, check=True
        )
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [HAPROXY, "-W", "-db", "-f", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 20
        for host, port in wait_for:
            while not accepts(host, port):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{self.name} haproxy did not start: {_tail(self.log_path)}")
                time.sleep(0.02)

    def master_pid(self) -> int:
        return 0 if self.proc is None else self.proc.pid

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            _killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                _killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.proc = None


def backend_config(address: str, ports: Mapping[str, int], maxconn: int = 4000) -> str:
    """A HAProxy that answers 200 ``<name>`` on each port: fast backends that name themselves."""
    lines = [
        "global",
        f"    maxconn {maxconn}",
        "defaults",
        "    mode http",
        "    timeout connect 5s",
        "    timeout client 50s",
        "    timeout server 50s",
    ]
    for name, port in ports.items():
        lines += [
            f"frontend {name}",
            f"    bind {address}:{port}",
            f"    http-request return status 200 content-type text/plain string {name}",
        ]
    return "\n".join(lines) + "\n"


def handwritten_config(
    address: str, port: int, servers: Sequence[tuple[str, str, int]], maxconn: int
) -> str:
    """The minimal configuration an operator would write by hand for the same service."""
    lines = [
        "global",
        f"    maxconn {maxconn}",
        "defaults",
        "    mode http",
        "    timeout connect 5s",
        "    timeout client 50s",
        "    timeout server 50s",
        "frontend fe",
        f"    bind {address}:{port}",
        f"    maxconn {maxconn}",
        "    default_backend be",
        "backend be",
        "    balance roundrobin",
    ]
    lines += [f"    server {name} {host}:{srv_port}" for name, host, srv_port in servers]
    return "\n".join(lines) + "\n"


@dataclass
class LbaasServe:
    """`lbaas serve` (amphora provider, in-process agent and health manager) in a subprocess."""

    proc: subprocess.Popen[bytes]
    url: str
    state_dir: Path
    log_path: Path
    settings: dict[str, str]

    @classmethod
    def start(cls, workdir: Path, plan: AddressPlan, access_log: bool = True) -> LbaasServe:
        """``access_log``: False renders the VIP without logging (``--no-access-log``)."""
        state_dir = workdir / "state"
        log_path = workdir / "serve.log"
        api_port = free_port()
        settings = {
            "LBAAS_STATE_DIR": str(state_dir),
            "LBAAS_API__PORT": str(api_port),
            "LBAAS_AGENT__PORT": str(free_port()),
            "LBAAS_HEALTH__BIND_PORT": str(free_port(socket.SOCK_DGRAM)),
            "LBAAS_NETWORK__LOOPBACK_SUBNET_CIDR": plan.vip_subnet_cidr,
            "LBAAS_LOG_LEVEL": "WARNING",
            # Keep every rotated access-log file: lines are counted against requests
            # served, and a long run outgrows the default 5 × 64 MiB.
            "LBAAS_ACCESS_LOG__BACKUPS": "100",
            "LBAAS_ACCESS_LOG__CONNECTION_LOGGING": "true" if access_log else "false",
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith("LBAAS_")}
        env.update(settings)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "lbaas.cli", "serve"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        served = cls(proc, f"http://127.0.0.1:{api_port}", state_dir, log_path, settings)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"lbaas serve exited: {_tail(log_path)}")
            try:
                if httpx.get(served.url + "/", timeout=1).status_code == 200:
                    return served
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        served.stop()
        raise RuntimeError(f"lbaas serve did not answer: {_tail(log_path)}")

    def log_tail(self) -> str:
        return _tail(self.log_path)

    def stop(self) -> None:
        """Stop the server, then any HAProxy its agent left running under our state dir."""
        if self.proc.poll() is None:
            _killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                _killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        for pid in processes_mentioning(str(self.state_dir.absolute())):
            _kill(pid, signal.SIGKILL)


def processes_mentioning(needle: str) -> list[int]:
    """Pids whose command line contains ``needle`` (our state directory: our HAProxies)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if needle in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry.name))
    return found


def cpu_seconds(master: int) -> float:
    """User + system CPU seconds used so far by a HAProxy master and its current workers."""
    total = 0
    for pid in (master, *children_of(master)):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _killpg(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass
