"""Keeps ``bench/health_manager.py`` from rotting: ``--quick`` exits 0, every heartbeat of
every measured round is applied, the database ends up holding every status and every byte
reported, and the figures are there (their values are not judged)."""

from __future__ import annotations

from tests.bench.quick_run import quick_figures


def test_quick_run_applies_every_heartbeat() -> None:
    figures = quick_figures("health_manager.py")
    assert figures["loadbalancers"] == 5
    for phase in ("first_round_cold_caches", "transition_one_member_down", "transition_back_up"):
        assert figures[phase]["applied"] == 5, phase
        assert figures[phase]["heartbeats_per_s"] > 0, phase
        assert figures[phase]["cpu_ms_per_heartbeat"] > 0, phase
    steady = figures["steady_state"]
    assert steady["rounds"] >= 1
    assert steady["heartbeats_per_s_median"] > 0
    assert figures["checks"] == {"loadbalancers_online": 5, "listeners_with_all_bytes": 5}
