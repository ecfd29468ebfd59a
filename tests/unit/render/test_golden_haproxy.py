"""Golden files of the HAProxy renderer, compared exactly and validated by HAProxy itself.

Every case of ``golden_cases`` must render byte for byte to its file under
``tests/golden/haproxy/`` (set ``LBAAS_REGEN_GOLDEN=1`` or run
``python -m tests.unit.render.regenerate`` to rewrite them), and every file must pass
``haproxy -c`` without a single warning or alert.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from .golden_cases import CASES, GoldenCase
from .haproxy_runner import check_config, run_dir_config
from .regenerate import GOLDEN_DIR, golden_path, regenerate, render_case

REGENERATE = os.environ.get("LBAAS_REGEN_GOLDEN") == "1"


@pytest.fixture(scope="module", autouse=True)
def _regenerate_when_asked() -> None:
    if REGENERATE:
        regenerate()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_render_matches_golden(case: GoldenCase) -> None:
    path = golden_path(case)
    assert path.exists(), f"{path} is missing: run python -m tests.unit.render.regenerate"
    assert render_case(case) == path.read_text()


def test_every_golden_file_belongs_to_a_case() -> None:
    expected = {golden_path(case).name for case in CASES}
    assert {path.name for path in GOLDEN_DIR.glob("*.cfg")} == expected


def test_cases_have_unique_names() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))


@pytest.mark.haproxy
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_is_accepted_by_haproxy(case: GoldenCase) -> None:
    with tempfile.TemporaryDirectory(prefix="lbhx-") as tmp:
        config = run_dir_config(golden_path(case).read_text(), Path(tmp))
        result = check_config(config)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "[WARNING]" not in output and "[ALERT]" not in output, output
