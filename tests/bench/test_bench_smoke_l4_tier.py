"""Keeps ``bench/l4_tier.py`` from rotting: ``--quick`` exits 0 and prints every figure
(their values are not judged)."""

from __future__ import annotations

import os

import pytest

from tests.bench.quick_run import quick_figures


@pytest.mark.slow
def test_quick_run_prints_the_tier_figures() -> None:
    figures = quick_figures("l4_tier.py")
    if os.geteuid() != 0:
        assert "skipped" in figures
        return
    assert figures["bfd"] is True and figures["nodes"] == 3
    for mode in ("host_down", "link_loss"):
        row = figures[mode]
        assert row["trials"] == 1
        assert 0 < row["withdrawal_ms_p50"] <= row["withdrawal_ms_max"]
        assert row["new_connections"] >= row["failed_new_connections"] >= 0
        assert row["new_connections"] > 0
    for survival in (figures["survival"]["nat"], figures["survival"]["dsr"]):
        assert survival["established"] == 30 and 0 <= survival["survived"] <= 30
        assert 0 <= survival["through_the_dead_node"] <= 30
    assert "load average" in figures["uptime"]
    group = figures["group_grow_shrink"]
    assert group["grow_ms"] > 0 and group["shrink_ms"] > 0 and group["new_connections"] > 0
    assert 0 <= group["held_survived"] <= group["held"] == 30
    for mode in ("dsr", "nat"):
        move = figures["group_move"][mode]
        assert move["to_nodes"] == [3] and move["move_ms"] > 0 and move["new_connections"] > 0
        assert 0 <= move["held_survived"] <= move["held"] == 30
    assert set(figures["dsr_connections_per_s"]) == {"nodes_1", "nodes_2", "nodes_3"}
    assert all(rate > 0 for rate in figures["dsr_connections_per_s"].values())
