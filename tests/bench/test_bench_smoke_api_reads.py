"""Keeps ``bench/api_reads.py`` from rotting: ``--quick`` (20 load balancers) exits 0,
measures every read with its statements, and drops its database (values not judged)."""

from __future__ import annotations

import psycopg
import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


def _bench_databases() -> set[str]:
    with psycopg.connect(ADMIN) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'api_reads_%'")
        return {name for (name,) in rows}


def test_quick_run_measures_every_read_and_drops_its_database() -> None:
    before = _bench_databases()
    figures = quick_figures("api_reads.py")
    size = figures["20"]
    assert set(size["per_request"]) == {
        "show", "tenant_list", "admin_page_limit_1000", "admin_page_default",
        "admin_page_marker", "pool_members",
    }  # fmt: skip
    for read in size["per_request"].values():
        assert read["statements"] >= 1 and read["bytes"] > 0
    assert size["under_clients"]["errors"] == {}
    assert _bench_databases() <= before
