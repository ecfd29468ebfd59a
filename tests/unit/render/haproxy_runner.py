"""Running the real ``haproxy`` binary on rendered configurations, for the tests.

The goldens are rendered with paths under a placeholder directory; ``run_dir_config``
swaps in a real temporary directory that also holds what the agent would provide there: a
server-state file holding just the format version (so HAProxy has no missing-file warning)
and an executable PING script. A missing binary is a test failure, never a skip: a
configuration nobody checked with HAProxy is not known to work.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lbaas.model.graph import LoadBalancer
from lbaas.render.haproxy import render_haproxy_config
from lbaas.render.haproxy.context import HaproxyContext, HaproxyPeers

from .golden_cases import RUN_DIR


def haproxy_binary() -> str:
    path = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    if path is None:
        pytest.fail("the haproxy binary is required to validate rendered configurations")
    return path


def prepare_run_dir(run_dir: Path, ctx: HaproxyContext | None = None) -> None:
    """Create the files a rendered configuration expects under ``run_dir``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "server-state").write_text("1\n")
    script = run_dir / "ping-member"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)


def run_dir_config(golden_text: str, run_dir: Path) -> Path:
    """Write a golden configuration with its placeholder paths pointing into ``run_dir``."""
    prepare_run_dir(run_dir)
    path = run_dir / "haproxy.cfg"
    path.write_text(golden_text.replace(RUN_DIR, str(run_dir)))
    return path


def check_config(path: Path) -> subprocess.CompletedProcess[str]:
    """``haproxy -c -f <path>``, run in the configuration's directory."""
    return subprocess.run(
        [haproxy_binary(), "-c", "-f", str(path)],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port free on ``address`` now, for a listener of a rendered configuration."""
    with socket.socket() as probe:
        probe.bind((address, 0))
        port: int = probe.getsockname()[1]
        return port


def runtime_command(sock_path: Path, command: str, timeout: float = 10) -> str:
    """One command's whole answer on HAProxy's runtime socket."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(timeout)
        conn.connect(str(sock_path))
        conn.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def wait_for_runtime(sock_path: Path, process: subprocess.Popen[bytes], limit: float) -> None:
    """Until HAProxy answers on its runtime socket; fails if it exits or ``limit`` seconds
    pass (a bound against hanging, not an assertion on speed)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert process.poll() is None, "haproxy exited during start-up"
        try:
            runtime_command(sock_path, "show info")
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail("haproxy's runtime socket did not come up")


@contextmanager
def running_haproxy(
    lb: LoadBalancer,
    vip: str,
    prefix: str,
    limit: float = 30,
    peers: HaproxyPeers | None = None,
) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A real HAProxy (foreground, its own temporary directory) on the configuration lbaas
    renders for ``lb`` bound to ``vip`` (with a pair's ``peers``, if given); yields the
    configuration's path (its directory holds the runtime socket ``rt.sock``) and the
    process. Stopped on the way out, even after a failure."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        run_dir = Path(tmp)
        prepare_run_dir(run_dir)
        ctx = HaproxyContext(vip, str(run_dir / "rt.sock"), str(run_dir), 1000, peers=peers)
        config = run_dir / "haproxy.cfg"
        config.write_text(render_haproxy_config(lb, ctx))
        process = subprocess.Popen(
            [haproxy_binary(), "-db", "-f", str(config)],
            cwd=run_dir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_runtime(run_dir / "rt.sock", process, limit)
            yield config, process
        finally:
            os.kill(process.pid, signal.SIGCONT)  # a test may have stopped it
            process.terminate()
            process.wait(timeout=30)
