"""Keeps ``bench/chaos.py`` from rotting: ``--quick`` exits 0 and prints every figure.

Only the shape of the JSON is checked (the run shares two cores with the rest of the
suite); the figures, violations included, are for the full run to report.
"""

from __future__ import annotations

import os

import pytest

from tests.bench.quick_run import quick_figures

TOP_KEYS = {
    "quick",
    "database",
    "agent_socket",
    "kills",
    "kills_total",
    "requests",
    "acknowledged_creates",
    "acknowledged_deletes",
    "api_outages",
    "server_errors",
    "settle_s",
    "longest_pending_s",
    "longest_streaks",
    "violations",
    "violation_count",
    "targets",
    "load",
}
TARGET_KEYS = {"at_least_100_kills", "zero_violations", "longest_pending_within_10s"}


@pytest.mark.slow
@pytest.mark.haproxy
@pytest.mark.timeout(400)
def test_quick_run_prints_every_figure() -> None:
    # Without haproxy the bench says so and exits 1, which quick_figures reports.
    figures = quick_figures("chaos.py", timeout=360)
    assert TOP_KEYS <= figures.keys()
    assert figures["quick"] is True
    assert TARGET_KEYS <= figures["targets"].keys()
    assert figures["kills_total"] == sum(figures["kills"].values())
    assert figures["violation_count"] == len(figures["violations"])
    assert figures["acknowledged_creates"] > 0, "the load created nothing"
    # Each streak names what was killed around it; the first is the longest.
    streaks = figures["longest_streaks"]
    assert all(isinstance(s["kills"], list) for s in streaks)
    lengths = [s["seconds"] for s in streaks]
    assert lengths == sorted(lengths, reverse=True)


@pytest.mark.slow
@pytest.mark.haproxy
@pytest.mark.timeout(700)
def test_quick_single_crash_prints_pending_per_kind_and_serve_start() -> None:
    figures = quick_figures("chaos.py", "--case", "single-crash", timeout=660)
    assert figures["case"] == "single-crash" and figures["trials_per_kind"] == 1
    kinds = {"api", "worker", "health", "serve-worker", "serve"}
    assert set(figures["pending_s"]) == kinds
    assert all(len(k["samples"]) == 1 for k in figures["pending_s"].values())
    # serve started once, then again after its own kill: each start's time and CPU.
    start = figures["serve_start"]
    assert len(start["answer_s"]) == len(start["cpu_at_answer_s"]) == 2
    assert {"pending_p95_within_10s", "serve_answers_within_5s"} <= figures["targets"].keys()


@pytest.mark.slow
@pytest.mark.haproxy
@pytest.mark.timeout(500)
@pytest.mark.skipif(os.geteuid() != 0, reason="forges heartbeat sources: needs a raw socket")
def test_quick_forged_flood_prints_failovers_hosts_down_and_status_delays() -> None:
    figures = quick_figures("chaos.py", "--case", "forged-flood", timeout=460)
    for flood in ("own_source", "many_sources"):
        run = figures[flood]
        assert run["forged_sent"] > 0, f"{flood}: nothing was forged"
        assert {"failovers", "hosts_marked_down", "amphora_replaced"} <= run.keys()
        assert run["longest_status_delay_s"] == max(run["status_delay"].values())
    # The forged source is the agent's own heartbeat socket.
    assert figures["agent_source"][1] > 0
    assert set(figures["targets"]) == {"own_source", "many_sources"}


@pytest.mark.slow
@pytest.mark.haproxy
@pytest.mark.timeout(500)
@pytest.mark.skipif(os.geteuid() != 0, reason="runs with the health cases' raw-socket check")
def test_quick_stalled_agent_prints_failovers_per_trial() -> None:
    figures = quick_figures("chaos.py", "--case", "stalled-agent", timeout=460)
    [trial] = figures["trials"]
    assert {"failovers", "hosts_marked_down", "agent_degraded", "amphora_replaced"} <= trial.keys()
    assert figures["failovers"] == trial["failovers"]
