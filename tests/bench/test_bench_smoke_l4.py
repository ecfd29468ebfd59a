"""Keeps ``bench/l4.py`` from rotting: ``--quick`` exits 0 and prints every figure
(their values are not judged)."""

from __future__ import annotations

import os

from tests.bench.quick_run import quick_figures


def test_quick_run_prints_the_l4_figures() -> None:
    figures = quick_figures("l4.py")
    maglev = figures["maglev"]
    assert maglev["build_ms"] > 0 and maglev["size"] == 1009
    assert 0 < maglev["moved_beyond_removed_share"] < 1
    assert maglev["down_moved_beyond_its_share"] == 0
    # Removal as the engine does it (a tombstone): nothing beyond the member's own slots.
    tombstones = figures["tombstones"]
    assert tombstones["moved_beyond_removed_times_1_over_n"] == 0
    assert tombstones["replacement_moved_over_removed_share"] == 1
    assert tombstones["tombstones_1"]["compaction_moved_times_1_over_n"] > 0
    assert [row["size"] for row in figures["sizes"]] == [251, 1009]
    # One small pool (the Python fill) and one large enough for the numpy fill.
    assert [row["members"] for row in figures["builds"]] == [50, 600]
    assert all(row["cpu_ms_median"] > 0 for row in figures["builds"])
    assert [row["size"] for row in figures["disruption_by_size"]] == [1009, 2003]
    if os.geteuid() == 0:
        kernel = figures["kernel"]
        assert kernel["member_down_update_ms"] > 0 and kernel["member_removed_update_ms"] > 0
        assert 0 < kernel["member_down_slots_rewritten"] < 1009
        assert 0 < kernel["member_removed_slots_rewritten"] < 1009
        # The tombstone moves fewer slots than the plain rebuild's cascade.
        rebuilt = kernel["member_removed_plain_rebuild_slots_rewritten"]
        assert kernel["member_removed_slots_rewritten"] < rebuilt
        assert kernel["full_reload_ms"] > 0
        # allowed_cidrs: with --quick only the table's load with 1 and 100 networks.
        loads = figures["allowed_cidrs"]["loads"]
        assert [row["allowed_cidrs"] for row in loads] == [1, 100]
        assert all(row["load_ms"] > 0 for row in loads)
