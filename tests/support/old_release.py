"""The previous release's code (commit 6824d05, wire version 1) beside this one.

``extracted`` writes that commit's ``lbaas`` package into a directory with ``git
archive``; ``run_old`` runs a Python snippet with it first on the path, in a child process
(two packages named ``lbaas`` cannot share one interpreter), and returns what the
snippet prints as JSON. Tests skip when the checkout has no git history of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PREVIOUS_RELEASE = "6824d05"
_REPO = Path(__file__).resolve().parents[2]


def extracted(into: Path) -> Path | None:
    """The previous release's package under ``into``; None: not in this checkout."""
    archive = subprocess.run(
        ["git", "-C", str(_REPO), "archive", PREVIOUS_RELEASE, "lbaas"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def run_old(root: Path, snippet: str, given: Any) -> Any:
    """Run ``snippet`` with the old package importable; it reads ``given`` as the JSON
    variable ``GIVEN`` and assigns its answer to ``ANSWER``."""
    program = "import json, sys\nGIVEN = json.load(sys.stdin)\n" + snippet
    program += "\nprint(json.dumps(ANSWER))\n"
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", program],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
