"""Keeps ``bench/l4_node_scale.py`` from rotting: ``--quick`` (root) exits 0 and prints every
programming figure at sizes 1 and 20, both paths' (netlink steps and text), and one round
of the packet comparison against the reference lab at 20 (values are not judged)."""

from __future__ import annotations

import os

import pytest

from tests.bench.quick_run import quick_figures


@pytest.mark.root
def test_quick_run_prints_the_node_scale_figures() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces and nftables")
    figures = quick_figures("l4_node_scale.py")
    assert [row["load_balancers"] for row in figures["rows"]] == [1, 20]
    for row in figures["rows"]:
        for name in ("one_more_ms", "slot_update_ms", "slot_update_text_ms", "remove_ms",
                     "remove_text_ms", "counters_ms"):  # fmt: skip
            assert row[name] > 0, (name, row)
    last = figures["rows"][-1]
    for mode in ("new_connection", "keepalive"):
        for name in ("per_s", "cpu_us"):
            assert last[f"{mode}_{name}_over_reference"] > 0, (mode, name, last)
