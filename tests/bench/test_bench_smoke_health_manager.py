"""Keeps ``bench/health_manager.py`` from rotting: ``--quick`` exits 0, every heartbeat of
every round is applied, and the figures are there (their values are not judged)."""

from __future__ import annotations

from tests.bench.quick_run import quick_figures


def test_quick_run_applies_every_heartbeat() -> None:
    figures = quick_figures("health_manager.py")
    assert figures["loadbalancers"] == 5
    for phase in ("first_round_statuses_change", "steady_state"):
        assert figures[phase]["applied"] == 5, phase
        assert figures[phase]["heartbeats_per_s"] > 0
        assert figures[phase]["cpu_ms_per_heartbeat"] > 0
