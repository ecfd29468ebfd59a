"""Keeps ``bench/octavia_provider.py`` from rotting: ``--quick`` exits 0 with every
variant measured (its figures are not judged)."""

from __future__ import annotations

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


def test_quick_run_measures_every_variant() -> None:
    figures = quick_figures("octavia_provider.py", timeout=600)
    variants = figures["variants"]
    assert variants["lbaas_direct"]["active_ms"]["p50"] > 0
    assert variants["octavia_lbaas"]["active_ms"]["p50"] > 0
    assert variants["octavia_amphora_noop"]["active_ms"]["p50"] > 0
    assert variants["octavia_noop"]["post_ms"]["p50"] > 0
    assert "active_ms" not in variants["octavia_noop"]
