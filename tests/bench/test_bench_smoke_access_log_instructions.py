"""Keeps ``bench/access_log_instructions.py`` from rotting: ``--quick`` exits 0, counts
instructions for HAProxy without and with lbaas's access log, and every request served
with logging reached the line counter (its values are otherwise not judged)."""

from __future__ import annotations

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


def test_quick_run_counts_both_variants() -> None:
    figures = quick_figures("access_log_instructions.py")
    none, lbaas = figures["variants"]["none"], figures["variants"]["lbaas"]
    assert none["requests"] > 0 and lbaas["requests"] > 0
    assert none["log_lines"] is None
    # wrk stops with requests in flight: HAProxy logs those, wrk does not count them.
    assert lbaas["requests"] <= lbaas["log_lines"] <= lbaas["requests"] + 4
    # Counted instructions, not time: making and sending a line is work HAProxy adds.
    assert lbaas["instructions_per_request"] > none["instructions_per_request"] > 0
    assert figures["logging_instructions_per_request"] > 0
