"""The Grafana dashboard and the Prometheus alert rules in ``deploy/`` are loadable
(``promtool check rules``) and use only series lbaas exports: every metric name in their
expressions is a sample name of a family some lbaas process serves, read from the real
collectors (an in-process app's ``/metrics``, the health manager's, the tier watcher's,
serve's worker relay), so a renamed metric cannot leave a dead panel or a silent alert."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from lbaas.health.certificate_metrics import CertificateExpiryTimestamps
from lbaas.health.certificates import FleetCertificates
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.metrics import HealthManagerCollector
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.metrics.worker_relay import WorkerRelay
from lbaas.tier.metrics import TierCollector
from lbaas.wire.heartbeat.envelope import ReplayGuard
from tests.support.api_client import Api
from tests.support.control_plane import asgi_app, make_settings, running_control_plane

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "lbaas-alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "lbaas.json"
_NAME = re.compile(r"\blbaas_[a-z0-9_]+")
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}


def _sample_names(text: str) -> set[str]:
    """Every sample name Prometheus stores for the families in an exposition."""
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names |= {family.name + s for s in _SUFFIXES.get(family.type, ("",))}
    return names


def _collected(*collectors: Any) -> str:
    registry = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry).decode()


def _exported(state_dir: Path) -> set[str]:
    settings = make_settings(state_dir, api={"metrics_enabled": True})
    with running_control_plane(settings) as plane, TestClient(asgi_app(plane)) as client:
        Api(client, "p-alpha", "member").create_lb()  # a converge: the histogram's buckets
        scraped = client.get("/metrics")
        assert scraped.status_code == 200
    store = InMemoryHealthStore()
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), b"k" * 32, ReplayGuard(max_age=30.0))
    sweeper = StaleAmphoraSweeper(store, stale_after=3.0, failover_threshold=0.5)
    tier_status = {"nodes": {"n1": {"lease": {"age_s": 1.0, "held": True}, "announced": []}}}
    others = _collected(
        HealthManagerCollector(receiver, sweeper),
        TierCollector(lambda: tier_status),
        CertificateExpiryTimestamps(FleetCertificates(state_dir / "pki", list, _no_client)),
        WorkerRelay("http://127.0.0.1:9/metrics", timeout=0.5),  # port 9: nobody answers
    )
    return _sample_names(scraped.text) | _sample_names(others)


def _no_client(host: Any) -> Any:
    raise AssertionError("a scrape calls no agent")


def _rule_expressions() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def _panel_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]


def test_promtool_accepts_the_alert_rules() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: apt-get install prometheus (./quickstart does)"
    checked = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 23 rules found" in checked.stdout


def test_dashboard_and_rules_use_only_exported_metrics(state_dir: Path) -> None:
    exported = _exported(state_dir)
    # The sources above do define what the deploy files rely on most.
    assert {"lbaas_converge_duration_seconds_count", "lbaas_failover_circuit_open"} <= exported
    assert "lbaas_member_status" in exported and "lbaas_heartbeats" not in exported
    for where, expressions in (("rules", _rule_expressions()), ("dashboard", _panel_expressions())):
        used = {name for expr in expressions for name in _NAME.findall(expr)}
        assert len(used) > 15, f"{where}: only {sorted(used)}"
        unknown = used - exported
        assert not unknown, f"{where} uses metrics lbaas does not export: {sorted(unknown)}"
