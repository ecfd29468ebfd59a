"""Keeps ``bench/dataplane.py`` from rotting: ``--quick`` exits 0 and prints every figure.

Nothing here looks at the figures themselves (no assertion on time or throughput): the run
shares two cores with the rest of the suite, so only the shape of the JSON is checked.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.bench.quick_run import quick_figures

TOP_KEYS = {
    "quick",
    "generator",
    "host",
    "lbaas_settings",
    "configs",
    "throughput",
    "idle_cpu_ms_per_s",
    "access_log",
    "tls",
    "member_post_to_first_served",
    "full_tree_post_to_first_response",
    "reconfiguration_under_load",
    "amphora_crash_recovery",
    "targets",
    "notes",
}
TARGET_KEYS = {
    "throughput_ratio_keepalive",
    "throughput_ratio_new_connection",
    "member_served_within_200ms",
    "full_tree_serving_within_300ms",
    "zero_errors_during_reconfiguration",
    "crash_recovery_within_5s",
    "access_log_no_line_lost",
}
TLS_KEYS = {
    "keepalive_requests_per_s",
    "new_handshakes_per_s",
    "resumed_handshakes_per_s",
    "ratio_keepalive",
    "ratio_resumed_handshakes",
    "ratio_handshakes",
    "target_ratio_min",
    "all_processes_cpu_us_per_keepalive_request",
    "cpu_us_per_new_handshake_by_process",
}
PROCESSES = {
    "vip_haproxy",
    "handwritten_haproxy",
    "backends",
    "lbaas_serve",
    "lbaas_serve_access_log_reader",
    "lbaas_worker",
    "load_generator",
    "machine",
}
PER_TARGET = {"requests_per_s", "p50_ms", "p99_ms", "errors", "requests_per_s_samples"}


def _run_quick() -> dict[str, Any]:
    return quick_figures("dataplane.py", "--no-install", timeout=540)


@pytest.mark.slow
@pytest.mark.haproxy
@pytest.mark.timeout(600)
def test_quick_run_prints_every_figure() -> None:
    if shutil.which("haproxy") is None:
        pytest.fail("haproxy is not installed")
    figures = _run_quick()

    assert TOP_KEYS <= figures.keys()
    assert figures["quick"] is True
    assert {"name", "connections"} <= figures["generator"].keys()

    throughput = figures["throughput"]
    for mode in ("keepalive", "new_connection_per_request"):
        section = throughput[mode]
        for target in ("lbaas_vip", "handwritten_haproxy", "direct_backend"):
            assert PER_TARGET <= section[target].keys(), (mode, target)
            assert isinstance(section[target]["requests_per_s"], int | float)
        assert isinstance(section["ratio_lbaas_to_handwritten"], int | float)
        assert isinstance(section["p99_ratio_lbaas_to_handwritten"], int | float)
        for target in ("lbaas_vip", "handwritten_haproxy"):  # HAProxy's own CPU per request
            assert section[target]["haproxy_cpu_us_per_request"] > 0, (mode, target)
        assert section["haproxy_cpu_ratio_lbaas_to_handwritten"] > 0, mode
        for target in ("lbaas_vip", "handwritten_haproxy"):  # every process, per request
            by_process = section[target]["cpu_us_per_request_by_process"]
            assert PROCESSES <= by_process.keys(), (mode, target)
            assert by_process["all_processes"] > 0, (mode, target)
        assert section["all_processes_cpu_ratio_lbaas_to_handwritten"] > 0, mode
    assert PROCESSES <= figures["idle_cpu_ms_per_s"].keys()

    for name in ("member_post_to_first_served", "full_tree_post_to_first_response"):
        assert {"median_ms", "samples_ms", "target_ms", "met"} <= figures[name].keys(), name
    assert {"changes", "requests", "errors", "error_kinds", "met"} <= figures[
        "reconfiguration_under_load"
    ].keys()
    assert {"median_s", "samples_s", "runs", "met"} <= figures["amphora_crash_recovery"].keys()

    assert TARGET_KEYS <= figures["targets"].keys()
    logged = figures["access_log"]
    assert logged["requests_served_by_vip"] > 0
    assert logged["lines_written"] > 0  # the VIP logs by default, the count is read back

    if figures["generator"]["name"] == "wrk":  # the TLS part needs wrk
        tls = figures["tls"]
        assert TLS_KEYS <= tls.keys()
        for key in ("keepalive_requests_per_s", "new_handshakes_per_s", "resumed_handshakes_per_s"):
            assert {"lbaas_vip", "handwritten_haproxy"} <= tls[key].keys(), key
        assert {"tls_ratio_keepalive", "tls_ratio_new_handshakes"} <= figures["targets"].keys()
    else:
        assert "skipped" in figures["tls"]
