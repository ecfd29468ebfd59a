"""End-to-end fixtures: ``lbaas serve`` as a real process on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import lbaas_env, lbaas_process
from tests.support.waiting import wait_until


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    state_dir: Path
    log: Path
    pid: int
    process: subprocess.Popen[bytes]


def free_udp_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def serve(tmp_path: Path, settings: dict[str, Any]) -> Iterator[Served]:
    """``lbaas serve`` with ``settings``; every port it binds is a free one unless given
    (the API's, the embedded agent's, the heartbeat receiver's), so that it may run beside
    another test's ``lbaas serve`` (the ``services`` group of tests/conftest.py)."""
    port = free_port()
    state_dir = tmp_path / "serve-state"
    log = tmp_path / "serve.log"
    env = lbaas_env(
        {
            "state_dir": str(state_dir),
            "worker": {"poll_interval": 0.1},
            **settings,
            "api": {"port": port, **settings.get("api", {})},
            "agent": {"port": free_port(), **settings.get("agent", {})},
            "health": {"bind_port": free_udp_port(), **settings.get("health", {})},
        }
    )
    url = f"http://127.0.0.1:{port}"
    with lbaas_process(["serve"], env, log) as proc:

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"lbaas serve exited: {log.read_text()[-2000:]}")
            try:
                return httpx.get(url + "/", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, 60, "lbaas serve to answer")
        yield Served(url, state_dir, log, proc.pid, proc)


@pytest.fixture
def noop_server(tmp_path: Path) -> Iterator[Served]:
    """``lbaas serve`` with the noop provider."""
    yield from serve(tmp_path, {"providers": {"enabled": ["noop"], "default": "noop"}})
