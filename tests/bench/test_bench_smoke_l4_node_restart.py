"""Keeps ``bench/l4_node_restart.py`` from rotting: ``--quick`` (root) exits 0, restores 20
load balancers into an empty namespace and again over the kernel's tables, and the ones
changed behind its back are right again (values are not judged)."""

from __future__ import annotations

import os

import pytest

from tests.bench.quick_run import quick_figures


@pytest.mark.root
def test_quick_run_prints_the_restart_figures() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces and nftables")
    (row,) = quick_figures("l4_node_restart.py")["rows"]
    assert row["load_balancers"] == 20 and row["drift_fixed"] is True
    for phase in ("cold", "restart"):
        assert row[phase]["restored"] == 20, row
        for name in ("restore_s", "ready_s", "cpu_s", "peak_rss_mb", "rss_mb"):
            assert row[phase][name] >= 0, (phase, name, row)
