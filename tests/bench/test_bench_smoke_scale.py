"""Keeps ``bench/scale.py`` from rotting: ``--quick`` builds 20 load balancers (one of them
an amphora) through the same code as the full run, and prints every figure.

Shapes and counts only, never timings: every load balancer created and ACTIVE, each
tenant list holding only its tenant's, the administrator's walk over the pages seeing
them all, every load balancer re-converged after the restart with no HAProxy replaced
(nothing differed), memory and database figures present, the slowest statements read
from the run's own PostgreSQL cluster (pg_stat_statements), which is gone afterwards,
and the curves drawn (``--plot``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.postgres, pytest.mark.haproxy]

LATENCIES = {"n", "p50_ms", "p99_ms", "max_ms"}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a namespace, nftables)")
@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs haproxy")
def test_quick_run_builds_measures_and_resyncs(tmp_path: Path) -> None:
    clusters_before = set(Path("/tmp").glob("scale-pg-*"))
    plot = tmp_path / "curves.svg"
    figures = quick_figures("scale.py", "--plot", str(plot), timeout=240)
    assert not set(Path("/tmp").glob("scale-pg-*")) - clusters_before  # removed
    assert figures["postgresql"] == "own cluster"
    assert figures["cpus"] >= 1 and len(figures["load_average_before"]) == 3
    (size,) = figures["sizes"]
    total = size["load_balancers"]
    assert total == 20 and size["amphora_load_balancers"] == 1
    assert size["create"]["create"]["n"] == total and size["create"]["errors"] == {}
    converge = size["converge"]
    assert converge["created"] == total and converge["statuses"] == {"ACTIVE": total}
    assert converge["active_per_second"] > 0
    api = size["api"]
    assert api["errors"] == {}
    for name in ("show", "tenant_list", "admin_full_list"):
        assert set(api[name]) == LATENCIES and api[name]["n"] > 0, name
    assert api["admin_list_lbs_max"] == total and api["requests_per_second"] > 0
    assert 1 <= api["tenant_list_lbs_median"] <= total // figures["projects"] + 1
    memory = size["memory"]
    assert memory["serve_api_mb"] > 0 and memory["serve_worker_mb"] > 0
    assert memory["node_agent_mb"] > 0 and memory["haproxy_processes"] >= 1
    database = size["database"]
    assert database["rows"]["load_balancers"] == total
    assert database["rows"]["members"] == 2 * total and database["size_mb"] > 0
    _check_statements(database["slowest_statements"])
    resync = size["resync"]
    assert resync["reconverged"] == total and resync["all_reconverged_seconds"] > 0
    assert resync["haproxy_processes_replaced"] == 0 and resync["haproxy_cpu_seconds"] >= 0
    _check_statements(resync["slowest_statements"])
    drawn = plot.read_text()
    assert drawn.startswith("<svg") and drawn.count("<polyline") >= 8  # 4 panels of lines
    assert "API latency" in drawn and "resident memory" in drawn


def _check_statements(slowest: Any) -> None:
    """Ten at most by total and by mean time, the slowest first, none of the bench's own."""
    assert set(slowest) == {"total", "mean"}
    for order, rows in slowest.items():
        assert 1 <= len(rows) <= 10
        assert all(set(r) == {"calls", "mean_ms", "total_ms", "query"} for r in rows)
        times = [r[f"{order}_ms"] for r in rows]
        assert times == sorted(times, reverse=True), order
        assert all(len(r["query"]) <= 160 and "scale-bench" not in r["query"] for r in rows)
