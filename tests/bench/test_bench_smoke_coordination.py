"""Keeps ``bench/coordination.py`` from rotting: ``--quick`` (20 renewals and one leader
change per engine, against the suite's PostgreSQL and, when installed, an etcd it starts on
loopback) exits 0 and prints its figures.

Not timings: only that each figure was measured and is what a lease allows (a crashed
leader's lease is taken no sooner than most of its TTL, a released one long before it).
"""

from __future__ import annotations

import shutil
from typing import Any

from tests.bench.quick_run import quick_figures


def _measured(engine: dict[str, Any], ttl: float) -> None:
    renew = engine["renew_ms"]
    assert 0 < renew["p50"] <= renew["p99"] <= renew["max"]
    takeover, handover = engine["takeover_s"], engine["handover_ms"]
    # The follower cannot hold the lease while the crashed leader's TTL runs (counted from
    # the engine's now, a little before the bench's clock reads "last renewal").
    assert ttl * 0.5 < takeover["p50"] <= takeover["max"]
    assert 0 < handover["p50"] <= handover["max"] < takeover["p50"] * 1000


def test_quick_run_measures_every_engine() -> None:
    figures = quick_figures("coordination.py", timeout=180)
    ttl = figures["ttl_s"]
    assert len(figures["load_before"]) == 3 and len(figures["load_after"]) == 3
    _measured(figures["postgresql"], ttl)
    if shutil.which("etcd") is None:
        assert figures["etcd"].startswith("not installed")
    else:
        _measured(figures["etcd"], ttl)
        assert figures["etcd"]["takeover_s"]["p50"] >= 1.0  # etcd's whole-second minimum
