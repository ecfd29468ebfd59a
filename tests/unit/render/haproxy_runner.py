"""Running the real ``haproxy`` binary on rendered configurations, for the tests.

The goldens are rendered with paths under a placeholder directory; ``run_dir_config``
swaps in a real temporary directory that also holds what the agent would provide there: a
server-state file holding just the format version (so HAProxy has no missing-file warning)
and an executable PING script. A missing binary is a test failure, never a skip: a
configuration nobody checked with HAProxy is not known to work.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lbaas.render.haproxy.context import HaproxyContext

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
