"""Keeps ``bench/kubernetes.py`` from rotting: ``--quick`` exits 0 and prints every figure
(their values are not looked at: the run shares two cores with the rest of the suite)."""

from __future__ import annotations

import shutil

import pytest

from tests.bench.quick_run import quick_figures


@pytest.mark.slow
@pytest.mark.haproxy
@pytest.mark.timeout(600)
def test_quick_run_prints_every_figure() -> None:
    if shutil.which("haproxy") is None:
        pytest.fail("haproxy is not installed")
    figures = quick_figures("kubernetes.py", timeout=540)
    assert figures["quick"] is True
    amphora = figures["amphora"]
    for name in (
        "service_post_to_vip_first_answer",
        "member_joined_to_first_answer",
        "member_removed_to_last_answer",
    ):
        assert {"count", "p50_ms", "p95_ms", "max_ms"} <= amphora[name].keys(), name
        assert amphora[name]["count"] >= 1
    assert amphora["octavia_writes_per_endpoint_change"] > 0
    noop = figures["noop"]
    assert noop["services_created_at_once"] == 5
    assert noop["all_converged_s"] > 0
    assert 1 <= noop["burst_of_50_endpoint_updates_member_writes"] <= 50
