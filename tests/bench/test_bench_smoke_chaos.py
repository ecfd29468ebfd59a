"""Keeps ``bench/chaos.py`` from rotting: ``--quick`` exits 0 and prints every figure.

Only the shape of the JSON is checked (the run shares two cores with the rest of the
suite); the figures, violations included, are for the full run to report.
"""

from __future__ import annotations

import pytest

from tests.bench.quick_run import quick_figures

TOP_KEYS = {
    "quick",
    "database",
    "agent_socket",
    "kills",
    "kills_total",
    "requests",
    "acknowledged_creates",
    "acknowledged_deletes",
    "api_outages",
    "server_errors",
    "settle_s",
    "longest_pending_s",
    "longest_streaks",
    "violations",
    "violation_count",
    "targets",
    "load",
}
TARGET_KEYS = {"at_least_100_kills", "zero_violations", "longest_pending_within_10s"}


@pytest.mark.slow
@pytest.mark.haproxy
@pytest.mark.timeout(400)
def test_quick_run_prints_every_figure() -> None:
    # Without haproxy the bench says so and exits 1, which quick_figures reports.
    figures = quick_figures("chaos.py", timeout=360)
    assert TOP_KEYS <= figures.keys()
    assert figures["quick"] is True
    assert TARGET_KEYS <= figures["targets"].keys()
    assert figures["kills_total"] == sum(figures["kills"].values())
    assert figures["violation_count"] == len(figures["violations"])
    assert figures["acknowledged_creates"] > 0, "the load created nothing"
    # Each streak names what was killed around it; the first is the longest.
    streaks = figures["longest_streaks"]
    assert all(isinstance(s["kills"], list) for s in streaks)
    lengths = [s["seconds"] for s in streaks]
    assert lengths == sorted(lengths, reverse=True)
