"""Keeps ``bench/ring_reader.py`` from rotting: ``--quick`` reads a real HAProxy's ring
while wrk drives it, and loses no line."""

from __future__ import annotations

import shutil

import pytest

from tests.bench.quick_run import quick_figures


@pytest.mark.skipif(shutil.which("wrk") is None, reason="the ring bench drives HAProxy with wrk")
def test_quick_run_prints_the_cost_per_line_and_loses_no_line() -> None:
    figures = quick_figures("ring_reader.py", timeout=120)
    live = figures["live"]
    assert live["lines"] >= live["requests"] > 0
    assert live["lost_bytes"] == 0 and live["us_per_line"] > 0
    assert figures["parse"]["us_per_line"] > 0
