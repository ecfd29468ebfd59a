"""Keeps ``bench/metadata.py`` from rotting: ``--quick`` exits 0 and prints its figures.

A quick run binds one port, waits for its proxy to answer with the instance's id (the
bench exits non-zero otherwise), sends a second of requests through it and reads the
proxy's memory.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy, pytest.mark.root]


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs haproxy")
@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_quick_run_reports_bind_time_throughput_and_memory() -> None:
    figures = quick_figures("metadata.py")
    assert figures["networks"] == 1 and figures["errors"] == 0
    assert figures["bound_to_answering_s"]["p50"] > 0
    assert figures["requests_per_s"] > 0 and figures["latency_ms"]["p99"] > 0
    assert figures["proxy_rss_kib"]["per_proxy_mean"] > 1000
