"""``lbaas api`` and ``lbaas worker`` stop in order on SIGTERM and exit with status 0.

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
