"""A real HAProxy (master and worker) that logs every request into a ring backed by a file.

For the tests of the agent's ring reading: each request to ``port`` is answered ``200`` by
HAProxy itself and logged as ``<project> <load balancer> <listener> <client port> "<request
line>" <status>``, the fields the access-log reader relies on.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.waiting import wait_until


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RingHaproxy:
    """The running HAProxy: its ring file, master pid file, and port."""

    directory: Path
    ring: Path
    pid_file: Path
    port: int
    loadbalancer_id: str

    @property
    def master(self) -> int:
        return int(self.pid_file.read_text().split()[0])

    def workers(self) -> set[int]:
        children = Path(f"/proc/{self.master}/task/{self.master}/children").read_text()
        return {int(pid) for pid in children.split()}

    def get(self, path: str, count: int = 1) -> None:
        """``count`` requests on one keep-alive connection, each answered 200."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for _ in range(count):
                conn.request("GET", path)
                response = conn.getresponse()
                response.read()
                assert response.status == 200
        finally:
            conn.close()

    def reload(self) -> None:
        """Replace the worker (SIGUSR2 to the master) and wait for the new one."""
        before = self.workers()
        os.kill(self.master, signal.SIGUSR2)
        wait_until(lambda: self.workers() - before, 10, "a new HAProxy worker")


def ring_config(ring: Path, port: int, loadbalancer_id: str, size: int) -> str:
    return "\n".join(
        [
            "global",
            "    log ring@al len 8192 format raw local0 info",
            "ring al",
            "    format raw",
            "    maxlen 8192",
            f"    size {size}",
            f'    backing-file "{ring}"',
            "defaults",
            "    mode http",
            "    timeout connect 5s",
            "    timeout client 5s",
            "    timeout server 5s",
            "frontend fe",
            f"    bind 127.0.0.1:{port}",
            "    log global",
            # As lbaas renders: at a reload, an idle keep-alive connection is closed only
            # after one more request, which the old worker serves and logs.
            "    option idle-close-on-response",
            f'    log-format "proj {loadbalancer_id} li %cp %{{+Q}}r %ST"',
            "    http-request return status 200 content-type text/plain string ok",
            "",
        ]
    )


@contextmanager
def ring_haproxy(
    directory: Path, loadbalancer_id: str = "lb-1", size: int = 1 << 20
) -> Iterator[RingHaproxy]:
    """HAProxy in master-worker mode logging into ``<directory>/amp.ring``; always stopped."""
    directory.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    running = RingHaproxy(
        directory, directory / "amp.ring", directory / "haproxy.pid", port, loadbalancer_id
    )
    config = directory / "haproxy.cfg"
    config.write_text(ring_config(running.ring, port, loadbalancer_id, size))
    master_socket = directory / "master.sock"
    argv = ["haproxy", "-W", "-D", "-S", str(master_socket), "-p", str(running.pid_file)]
    argv += ["-f", str(config)]
    # Its output to a file: the master outlives this call and writes on at each reload.
    with (directory / "haproxy.log").open("ab") as output:
        subprocess.run(argv, check=True, stdout=output, stderr=output, timeout=30)
    try:
        # The master handles SIGUSR2 (``reload``) once its loop runs, which its CLI tells.
        wait_until(lambda: _answers(master_socket), 10, "HAProxy's master CLI")
        wait_until(running.workers, 10, "HAProxy's first worker")
        yield running
    finally:
        try:
            master = running.master
        except (OSError, ValueError, IndexError):
            master = None
        if master is not None:
            pids = {master, *running.workers()}
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            wait_until(lambda: not any(_alive(pid) for pid in pids), 10, "HAProxy to exit")


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _answers(master_socket: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(str(master_socket))
            sock.sendall(b"show proc\n")
            return b"worker" in sock.recv(4096)
    except OSError:
        return False
