"""Keeps ``bench/failover.py`` from rotting: ``--quick`` exits 0 and prints its figures.

Two takeovers of a real keepalived pair and a 5-second soak: outcomes (every takeover
served again, the replacement joined, one VIP holder at the end), never timings. The
``lab`` measurement builds a 3-host lab (more than this smoke test's 20 s): its code is
``tests/support/lab_pair.py``, run by ``tests/e2e/lab/test_lab_takeover.py``; the
``host_loss`` one is smoke-tested through its alias (``test_bench_smoke_host_loss.py``).
"""

from __future__ import annotations

import os

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy, pytest.mark.root]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
def test_quick_run_takes_over_and_soaks() -> None:
    figures = quick_figures("failover.py", "--only", "takeover,soak")
    takeover = figures["takeover"]
    assert takeover["trials"] == 2
    assert len(takeover["takeover_s"]) == 2 and all(t > 0 for t in takeover["takeover_s"])
    assert takeover["replacement_ready_max_s"] > 0
    soak = figures["soak"]
    assert soak["vip_holders_at_end"] == 1
    assert soak["cpu_burners"] >= 1
