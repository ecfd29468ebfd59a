"""Keeps ``bench/health_manager.py`` from rotting: ``--quick`` exits 0, every heartbeat of
every measured round is applied, the database ends up holding every status and every byte
reported, the flood phase sends and refuses, and the figures are there (their values are
not judged)."""

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
    flood = figures["flood"]
    assert flood["forged_sent"] > 0 and flood["forged_refused"] > 0
    assert flood["forged_refused_per_s"] > 0
    assert flood["genuine_sent"] == 5 * 2  # five amphorae, two rounds in the quick flood
    assert flood["genuine_lost"] == flood["genuine_sent"] - flood["genuine_accepted"]
    assert flood["refusal_log_lines"] >= 1
