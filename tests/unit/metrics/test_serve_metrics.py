"""Whether ``lbaas serve`` serves /metrics: on by default on loopback, off beyond it
unless asked, and a worker child's endpoint on loopback when none is configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.config import load_settings
from lbaas.metrics.process import CONVERGE_HISTOGRAM
from lbaas.metrics.serve_metrics import is_loopback, serve_metrics


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.5", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.7", False),
        ("api.example", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_default_serve_turns_metrics_on_with_a_loopback_worker_port(tmp_path: Path) -> None:
    observed = serve_metrics(load_settings(None, overrides={"state_dir": str(tmp_path)}))
    assert observed.settings.api.metrics_enabled is True
    assert observed.worker_address is not None
    assert observed.worker_address[0] == "127.0.0.1"
    assert observed.announcement() == "lbaas metrics: http://127.0.0.1:9876/metrics (loopback only)"
    # The API process converges nothing under serve: the histogram comes from the child.
    assert observed.metrics.converges is None
    assert CONVERGE_HISTOGRAM not in {m.name for m in observed.metrics.registry.collect()}


def test_serve_beyond_loopback_keeps_metrics_off_unless_asked(tmp_path: Path) -> None:
    wide = {"state_dir": str(tmp_path), "api": {"host": "0.0.0.0"}}
    observed = serve_metrics(load_settings(None, overrides=wide))
    assert not observed.settings.api.metrics_enabled
    assert observed.worker_address is None
    assert "off: the API listens on 0.0.0.0" in observed.announcement()
    asked = {"state_dir": str(tmp_path), "api": {"host": "0.0.0.0", "metrics_enabled": True}}
    assert serve_metrics(load_settings(None, overrides=asked)).settings.api.metrics_enabled


def test_explicit_off_stays_off_and_a_configured_worker_port_is_kept(tmp_path: Path) -> None:
    off = {"state_dir": str(tmp_path), "api": {"metrics_enabled": False}}
    assert serve_metrics(load_settings(None, overrides=off)).announcement().endswith("= false)")
    port = {"state_dir": str(tmp_path), "worker": {"metrics_port": 9300}}
    assert serve_metrics(load_settings(None, overrides=port)).worker_address == ("127.0.0.1", 9300)
