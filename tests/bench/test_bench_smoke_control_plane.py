"""Keeps ``bench/control_plane.py`` from rotting: ``--quick`` exits 0 and prints every figure.

As for the data-plane smoke test, no figure is judged here (the run shares two cores with
the rest of the suite); only the shape of the JSON and the counts that must be exact.
"""

from __future__ import annotations

from tests.bench.quick_run import quick_figures

LATENCIES = (
    "post_latency",
    "post_to_active_one_lb",
    "post_to_active_full_tree_stepwise",
    "post_to_active_full_tree_single_call",
)


def test_quick_run_prints_every_figure() -> None:
    figures = quick_figures("control_plane.py")
    assert figures["database"] == "sqlite"
    for name in LATENCIES:
        assert set(figures[name]) == {"p50_ms", "p95_ms", "n"}, name
        assert figures[name]["p50_ms"] > 0, name
    concurrent = figures["concurrent_50_lbs_10_threads"]
    assert concurrent["errors"] == 0 and concurrent["seconds_to_all_active"] > 0
    batch = figures["batch_members_1000"]
    assert set(batch) == {
        "members",
        "create_put_ms",
        "create_active_ms",
        "replace_half_put_ms",
        "replace_half_active_ms",
    }
    assert batch["members"] == 50  # --quick
    for listing in ("list_200", "list_1000"):
        assert figures[listing]["requests_per_s"] > 0
        assert figures[listing]["single_client_requests_per_s"] > 0
