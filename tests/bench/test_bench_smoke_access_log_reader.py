"""Keeps ``bench/access_log_reader.py`` from rotting: ``--quick`` prints every figure, and
the reader, waiting or not between reads, writes every line the sender made."""

from __future__ import annotations

from tests.bench.quick_run import quick_figures


def test_quick_run_prints_the_cost_per_line_and_loses_no_line() -> None:
    figures = quick_figures("access_log_reader.py", "--waits", "0,0.02", timeout=120)
    assert set(figures["batch_wait_s"]) == {"0.0", "0.02"}
    for wait, found in figures["batch_wait_s"].items():
        assert found["reader_cpu_us_per_line"] > 0, wait
        assert found["lines_missing"] == 0, wait
