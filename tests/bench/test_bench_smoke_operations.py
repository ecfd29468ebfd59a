"""Keeps ``bench/operations.py`` from rotting: ``--quick`` exits 0 and its figures describe
the scrape and the dashboard reads it timed (their times are not judged)."""

from __future__ import annotations

from tests.bench.quick_run import quick_figures


def test_quick_run_scrapes_every_object() -> None:
    figures = quick_figures("operations.py")
    assert figures["loadbalancers"] == 3 and figures["members"] == 6
    # 3 load balancers: a status series per object (3 + 3 + 3 + 6) and five traffic
    # series per listener and per load balancer (30), besides the control plane's.
    assert figures["samples"] >= 15 + 30
    assert figures["scrape_ms_median"] > 0 and figures["bytes"] > 0
    # The collector's share is part of the scrape's wall time, never more.
    assert 0 <= figures["scrape_all_moved_gc_ms_median"] <= figures["scrape_all_moved_ms_max"]
    # The dashboard's stream saw each status change (it waits for the event carrying it).
    assert figures["dashboard_topology_ms_median"] > 0
    assert (
        figures["dashboard_change_to_event_ms_max"]
        >= figures["dashboard_change_to_event_ms_median"]
        > 0
    )
