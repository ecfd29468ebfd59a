"""``noauth`` serves loopback only: beyond it the start is refused, or warned about.

A real ``lbaas api`` process: the refusal comes before anything is bound (one line, exit
2). The warning with ``api.allow_insecure_noauth`` is tested on ``exposure_warning``
(tests/unit/identity/test_exposure.py); the command prints it before binding.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import free_port
from tests.support.processes import lbaas_env

COMMAND = [sys.executable, "-m", "lbaas.cli", "api"]


def _settings(state: Path, **api: object) -> dict[str, object]:
    return {"state_dir": str(state), "api": {"host": "0.0.0.0", "port": free_port(), **api}}


def test_noauth_beyond_loopback_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        COMMAND, env=lbaas_env(_settings(tmp_path)), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "noauth serves loopback addresses only, not 0.0.0.0" in lines[0]
    assert "allow_insecure_noauth" in lines[0]
