"""Running a benchmark script in its ``--quick`` mode and reading the JSON it prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def quick_figures(script: str, *extra: str, timeout: float = 300) -> dict[str, Any]:
    """Run ``bench/<script> --quick <extra>``; it must exit 0 and print one JSON object."""
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(ROOT / "bench" / script), "--quick", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-4000:]}"
    figures = json.loads(done.stdout)
    assert isinstance(figures, dict)
    return figures
