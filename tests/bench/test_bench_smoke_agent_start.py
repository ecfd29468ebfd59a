"""Keeps ``bench/agent_start.py`` from rotting: ``--quick`` exits 0 and prints its figures.

The outcome checked is which modules importing the agent loads: numpy and httpx (with
rich) cost a killed agent seconds before it answers again and it needs neither to serve.
"""

from __future__ import annotations

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = pytest.mark.slow


def test_quick_run_reports_start_up_without_heavy_imports() -> None:
    figures = quick_figures("agent_start.py", timeout=120)
    assert figures["runs"] == 1
    for key in (
        "python_seconds",
        "import_seconds",
        "import_cpu_seconds",
        "ready_seconds",
        "serving_seconds",
    ):
        assert figures[key] > 0, key
    assert figures["ready_seconds_max"] >= figures["ready_seconds"]
    # Answering over mutual TLS comes after accepting a connection, never before.
    assert figures["serving_seconds"] >= figures["ready_seconds"]
    assert figures["heavy_modules"] == []
