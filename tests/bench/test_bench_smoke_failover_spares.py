"""Keeps ``bench/failover.py``'s spare measurements from rotting (issue 35): ``single``
(SINGLE create and failover through ``lbaas serve`` in netns mode, here with one spare)
and ``agent_create`` (the agent's PUT with and without a spare). Outcomes only: every
trial ran, the spares were taken, a spare's memory was read; never timings.
"""

from __future__ import annotations

import os

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy, pytest.mark.root]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
def test_quick_run_measures_with_spares() -> None:
    figures = quick_figures(
        "failover.py", "--only", "single,agent_create", "--spares", "1", "--refill-wait", "1"
    )
    single = figures["single"]
    assert single["spare_amphorae"] == 1 and single["trials"] == 2
    assert single["spares_taken"] >= 1  # lbaas serve's agent made amphorae from spares
    # Each failover ran to ACTIVE; the VIP may never have stopped answering (make before
    # break: a failover without a gap has an outage of 0).
    assert len(single["failover_active_s"]["samples"]) == 2
    assert all(t > 0 for t in single["failover_active_s"]["samples"])
    assert all(t >= 0 for t in single["outage_s"]["samples"])
    agent = figures["agent_create"]
    assert agent["taken_from_pool"] == agent["trials_each"] == 3
    assert agent["spare_rss_kib"] > 0
