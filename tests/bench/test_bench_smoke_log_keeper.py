"""Keeps ``bench/log_keeper.py`` from rotting: ``--quick`` exits 0 and prints its figures
for the three spells (agent up, agent dead with the keeper, agent dead without)."""

from __future__ import annotations

import shutil

import pytest

from tests.bench.quick_run import quick_figures

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs haproxy")
def test_quick_run_samples_every_spell() -> None:
    figures = quick_figures("log_keeper.py")
    assert figures["haproxy_processes"] >= 1
    for spell in ("agent_up", "agent_down_kept", "agent_down_unkept"):
        assert figures[spell]["cpu_s"] >= 0
