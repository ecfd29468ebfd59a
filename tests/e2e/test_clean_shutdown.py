"""``lbaas api``, ``worker`` and ``health`` stop in order on SIGTERM and exit with status 0.

uvicorn re-raises the SIGTERM it handled once it has stopped serving; with Python's
default handler that killed ``lbaas api`` (status -15) before its cleanup ran.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import free_port
from tests.support.processes import lbaas_env, lbaas_process
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_api_exits_zero_on_a_stop_signal(tmp_path: Path, signum: int) -> None:
    port = free_port()
    env = lbaas_env(
        {
            "state_dir": str(tmp_path / "state"),
            "api": {"port": port},
            "providers": {"enabled": ["noop"], "default": "noop"},
        }
    )
    upgrade = [sys.executable, "-m", "lbaas.cli", "db", "upgrade"]
    subprocess.run(upgrade, env=env, check=True, capture_output=True, timeout=120)
    log = tmp_path / "api.log"
    with lbaas_process(["api"], env, log) as api:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(url), 60, "the API to answer")
        api.send_signal(signum)
        assert api.wait(30) == 0, log.read_text()[-2000:]
    assert not _answers(url)


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has its own SIGTERM handler (``SigCgt`` in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.parametrize("command", ["health", "worker"])
def test_a_stop_signal_while_still_starting_is_a_clean_stop(tmp_path: Path, command: str) -> None:
    """SIGTERM as soon as the process handles it, which is now before its second or so of
    imports and start-up: a process restarted and stopped at once (a supervisor's stop
    right after a crash) starts, stops in order and exits 0 (bench/chaos.py saw -15)."""
    env = lbaas_env(
        {
            "state_dir": str(tmp_path / "state"),
            "health": {"bind_port": free_port(), "metrics_port": 0},
            "providers": {"enabled": ["noop"], "default": "noop"},
        }
    )
    upgrade = [sys.executable, "-m", "lbaas.cli", "db", "upgrade"]
    subprocess.run(upgrade, env=env, check=True, capture_output=True, timeout=120)
    log = tmp_path / f"{command}.log"
    with lbaas_process([command], env, log) as proc:
        wait_until(lambda: _catches_sigterm(proc.pid), 60, "the SIGTERM handler")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-2000:]
