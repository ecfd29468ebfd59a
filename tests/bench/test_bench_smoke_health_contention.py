"""Keeps ``bench/health_contention.py`` from rotting: ``--quick`` (three health-manager
processes, five load balancers) exits 0, every manager applies every heartbeat of the
last round, and the database ends up holding every amphora's last stamp, every status
and every byte (the figures' values are not judged)."""

from __future__ import annotations

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


def test_quick_run_lands_every_fact_of_three_managers() -> None:
    figures = quick_figures("health_contention.py", "--admin-url", ADMIN)
    assert (figures["managers"], figures["loadbalancers"]) == (3, 5)
    assert figures["checks"] == {
        "applied_last_round": [5, 5, 5],
        "amphorae_with_last_stamp": 5,
        "amphorae_heard": 5,
        "loadbalancers_online": 5,
        "listeners_with_all_bytes": 5,
    }
    assert figures["flush_ms"]["count"] >= 3
    assert figures["heartbeats_per_s"]["all_managers_median"] > 0
