"""A client, an L4 balancer and backends, each in a network namespace this test creates.

    client ns  10.201.0.2 ──veth── 10.201.0.1  L4 ns (VIP 10.201.9.1 on lo, forwarding,
                                                      the engine's nftables table)
    backend ns i  10.202.i.2 ──veth── 10.202.i.1  L4 ns

All addresses live inside the test's own namespaces, so nothing leaks onto the host; the
links are created inside them and vanish with them. ``close`` kills the processes and
deletes the namespaces, and runs even when the test failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lbaas.l4.service import L4Member

PEERS = str(Path(__file__).with_name("l4_peers.py"))
VIP = "10.201.9.1"
BACKEND_PORT = 8000


def run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout


@dataclass
class L4Lab:
    backends: int = 3
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    namespaces: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def lb(self) -> str:
        return f"l4t-{self.tag}-lb"

    @property
    def client(self) -> str:
        return f"l4t-{self.tag}-cl"

    def backend(self, index: int) -> str:
        return f"l4t-{self.tag}-b{index}"

    def members(self) -> tuple[L4Member, ...]:
        return tuple(
            L4Member(f"b{index}", f"10.202.{index}.2", BACKEND_PORT)
            for index in range(1, self.backends + 1)
        )

    def build(self) -> None:
        self._namespace(self.lb)
        run("ip", "netns", "exec", self.lb, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        run("ip", "-n", self.lb, "addr", "add", f"{VIP}/32", "dev", "lo")
        self._wire(self.client, "10.201.0")
        for index in range(1, self.backends + 1):
            self._wire(self.backend(index), f"10.202.{index}")
            self._start_server(index)

    def _namespace(self, name: str) -> None:
        run("ip", "netns", "add", name)
        self.namespaces.append(name)
        run("ip", "-n", name, "link", "set", "lo", "up")

    def _wire(self, namespace: str, prefix: str) -> None:
        """A veth from ``namespace`` (.2) to the L4 namespace (.1), default route via .1."""
        self._namespace(namespace)
        inner, outer = "eth0", f"v{prefix.split('.', 1)[1].replace('.', 'x')}"
        run("ip", "link", "add", inner, "netns", namespace, "type", "veth", "peer", "name",
            outer, "netns", self.lb)  # fmt: skip
        run("ip", "-n", namespace, "addr", "add", f"{prefix}.2/24", "dev", inner)
        run("ip", "-n", self.lb, "addr", "add", f"{prefix}.1/24", "dev", outer)
        run("ip", "-n", namespace, "link", "set", inner, "up")
        run("ip", "-n", self.lb, "link", "set", outer, "up")
        run("ip", "-n", namespace, "route", "add", "default", "via", f"{prefix}.1")

    def _start_server(self, index: int) -> None:
        argv = ["ip", "netns", "exec", self.backend(index), sys.executable, PEERS, "server"]
        argv += [f"b{index}", f"10.202.{index}.2", str(BACKEND_PORT)]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        self.processes.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"

    def names(self, protocol: str, port: int, count: int) -> list[str]:
        """Which backends answer ``count`` new flows from the client to the VIP."""
        out = run("ip", "netns", "exec", self.client, sys.executable, PEERS, protocol, VIP,
                  str(port), str(count))  # fmt: skip
        names: list[str] = json.loads(out)
        return names

    def probe(self, protocol: str, port: int, seconds: float) -> str:
        """The member that answers one new flow to the VIP, or "timeout" (none within
        ``seconds``)."""
        return run("ip", "netns", "exec", self.client, sys.executable, PEERS, "probe", protocol,
                   VIP, str(port), str(seconds)).strip()  # fmt: skip

    def rate(self, protocol: str, address: str, port: int, seconds: float) -> float:
        """Requests/s of one client in the client namespace (bench/l4.py's traffic part)."""
        out = run("ip", "netns", "exec", self.client, sys.executable, PEERS, "rate", protocol,
                  address, str(port), str(seconds))  # fmt: skip
        per_second: float = json.loads(out)
        return per_second

    def hold(self, port: int, mode: str = "hold") -> HeldConnection:
        """One held flow: a TCP connection (``hold``) or a UDP socket (``hold-udp``)."""
        argv = ["ip", "netns", "exec", self.client, sys.executable, PEERS, mode, VIP, str(port)]
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.processes.append(process)
        return HeldConnection(process)

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait(10)
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
        self.processes.clear()
        for namespace in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)
        self.namespaces.clear()


@contextmanager
def built_lab() -> Iterator[L4Lab]:
    """A built lab (the test skipped without root), closed even when the test failed."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    lab = L4Lab()
    try:
        lab.build()
        yield lab
    finally:
        lab.close()


@dataclass
class HeldConnection:
    """One established flow through the VIP (a TCP connection, or a UDP socket whose
    datagrams share one 5-tuple), kept open by a client process."""

    process: subprocess.Popen[str]

    def greeting(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()


def namespace_exists(name: str) -> bool:
    return name in run("ip", "netns", "list").split()
