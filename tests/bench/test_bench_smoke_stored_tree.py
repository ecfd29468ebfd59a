"""Keeps ``bench/stored_tree.py`` from rotting: ``--quick`` exits 0 and prints both figures
(their values are not judged)."""

from __future__ import annotations

from tests.bench.quick_run import quick_figures


def test_quick_run_reads_every_tree() -> None:
    figures = quick_figures("stored_tree.py")
    assert figures["trees"] == 2
    assert figures["full_tree_cpu_ms"] > 0
    assert figures["bare_loadbalancer_cpu_ms"] > 0
