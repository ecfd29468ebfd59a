"""Keeps the ``host_loss`` measurement of ``bench/failover.py`` from rotting, through its
alias ``bench/host_loss.py``: ``--quick`` exits 0 and prints its figures.

A quick run loses one host of three; the load balancers that were on it must serve again
(the bench exits non-zero otherwise), and the figures must say how many and how long.
"""

from __future__ import annotations

import shutil

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs haproxy")
def test_quick_run_recovers_the_load_balancers_of_a_lost_host() -> None:
    figures = quick_figures("host_loss.py")["host_loss"]
    assert figures["hosts"] == 3 and figures["trials"] == 1
    assert figures["load_balancers_lost_per_trial"][0] >= 1
    recovery = figures["host_loss_recovery_s"]
    assert recovery["samples"] and recovery["max"] >= recovery["p50"] > 0
