"""Keeps ``bench/agent_stall.py`` from rotting: ``--quick`` exits 0 and prints its figures.

With the data-plane probe on, a stopped agent must not cost its amphora while HAProxy
serves, and a stopped agent with HAProxy killed must: those are outcomes, not timings.
"""

from __future__ import annotations

import shutil

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs haproxy")
def test_quick_run_fails_over_only_a_dead_data_plane() -> None:
    figures = quick_figures("agent_stall.py")
    agent_only = figures["agent_only"]
    assert agent_only["samples"] > 0
    assert agent_only["samples_with_failover_requested"] == 0
    assert agent_only["amphora_replaced"] is False
    both = figures["agent_and_haproxy"]
    assert both["amphora_replaced"] is True
    assert both["seconds_to_failover_requested"] > 0
