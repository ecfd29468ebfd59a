"""Keeps ``bench/scale.py`` from rotting: ``--quick`` builds 20 load balancers (one of them
an amphora) through the same code as the full run, and prints every figure.

The ``--lab`` run's own test is opt-in (``SCALE_LAB_SMOKE=1``): with two control and two
agent hosts it took 41-67 s on the 2-core machine (docs/benchmarks.md, "In the lab"),
more than the 60 s the suite, at its 30-minute budget, could add; the single-namespace
test stays in CI.

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
import subprocess
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
    size = _check_run(figures, amphora_lbs=1)
    assert size["memory"]["serve_worker_mb"] > 0 and size["memory"]["haproxy_processes"] >= 1
    drawn = plot.read_text()
    assert drawn.startswith("<svg") and drawn.count("<polyline") >= 8  # 4 panels of lines
    assert "API latency" in drawn and "resident memory" in drawn


@pytest.mark.skipif(
    os.environ.get("SCALE_LAB_SMOKE") != "1",
    reason="opt-in (SCALE_LAB_SMOKE=1): 41-67 s, over the 60 s the suite could add",
)
@pytest.mark.skipif(os.geteuid() != 0, reason="builds a lab: needs root")
@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs haproxy")
def test_quick_lab_run_spreads_over_control_hosts_and_adopts() -> None:
    """``--lab --quick`` with two control hosts on the lab's PostgreSQL and two agent hosts
    (the run's three and three cost some 10 s more): 20 load balancers of which one SINGLE
    amphora and one ACTIVE_STANDBY pair; the lab is gone afterwards."""
    namespaces_before = _namespaces()
    figures = quick_figures("scale.py", "--lab", "--hosts", "2", "--control", "2", timeout=280)
    assert _namespaces() - namespaces_before == set()  # the lab was taken down
    assert figures["postgresql"] == "the lab's database host"
    assert figures["setup"].startswith("lab: 2 control hosts")
    size = _check_run(figures, amphora_lbs=2)
    assert size["active_standby_load_balancers"] == 1
    memory = size["memory"]
    assert set(memory["hosts"]) == {"h1", "h2"}
    assert set(memory["control_hosts"]) == {"ctl", "ctl2"}
    assert all(h["agent_mb"] > 0 for h in memory["hosts"].values())
    assert all(c["api_mb"] > 0 and c["worker_mb"] > 0 for c in memory["control_hosts"].values())
    # Three amphorae (the pair's two and the SINGLE), two HAProxy processes each.
    assert memory["haproxy_processes"] == 6
    assert sum(h["keepalived_mb"] > 0 for h in memory["hosts"].values()) == 2
    restart = size["agent_restart"]
    assert restart["adopted"] == restart["amphora_namespaces"] >= 1
    assert restart["l4_services_restored"] == 18  # every distributed load balancer
    assert restart["haproxy_processes_replaced"] == 0
    assert restart["seconds_until_serving"] >= restart["seconds_until_port_accepts"] > 0


def _namespaces() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in listed.splitlines() if line.startswith("sc")}


def _check_run(figures: dict[str, Any], amphora_lbs: int) -> dict[str, Any]:
    """The one size's figures, checked for shape and counts; the size."""
    assert figures["cpus"] >= 1 and len(figures["load_average_before"]) == 3
    (size,) = figures["sizes"]
    total = size["load_balancers"]
    assert total == 20 and size["amphora_load_balancers"] == amphora_lbs
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
    assert memory["serve_api_mb"] > 0 and memory["node_agent_mb"] > 0
    database = size["database"]
    assert database["rows"]["load_balancers"] == total
    assert database["rows"]["members"] == 2 * total and database["size_mb"] > 0
    _check_statements(database["slowest_statements"])
    resync = size["resync"]
    assert resync["reconverged"] == total and resync["all_reconverged_seconds"] > 0
    assert resync["haproxy_processes_replaced"] == 0 and resync["haproxy_cpu_seconds"] >= 0
    _check_statements(resync["slowest_statements"])
    return dict(size)


def _check_statements(slowest: Any) -> None:
    """Ten at most by total and by mean time, the slowest first, none of the bench's own."""
    assert set(slowest) == {"total", "mean"}
    for order, rows in slowest.items():
        assert 1 <= len(rows) <= 10
        assert all(set(r) == {"calls", "mean_ms", "total_ms", "query"} for r in rows)
        times = [r[f"{order}_ms"] for r in rows]
        assert times == sorted(times, reverse=True), order
        assert all(len(r["query"]) <= 160 and "scale-bench" not in r["query"] for r in rows)
