"""``mypy --strict`` catches a misspelt column of the stored tree (issue 8, point 3).

Runs mypy on two checked-in snippets that read ``lbaas.db.loadbalancers.stored_tree`` the way converge,
settle and the status tree do: one spelled right (no errors), one with two misspelt
columns (each reported as ``has no attribute``). Run it alone with
``python -m pytest tests/unit/test_stored_tree_typing.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = Path(__file__).parent / "typing_examples"


def _mypy(*files: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *(str(f.relative_to(ROOT)) for f in files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.stdout + done.stderr


def test_a_misspelt_column_fails_mypy_strict_and_the_right_spelling_passes() -> None:
    right = EXAMPLES / "stored_tree_spelled_right.py"
    misspelt = EXAMPLES / "stored_tree_misspelt.py"
    out = _mypy(right, misspelt)
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert not [e for e in errors if right.name in e], out
    assert any(
        misspelt.name in e and '"StoredListener" has no attribute "protocl_port"' in e
        for e in errors
    ), out
    assert any(
        misspelt.name in e and '"StoredMember" has no attribute "wieght"' in e for e in errors
    ), out
    assert len([e for e in errors if "has no attribute" in e]) == 2, out
