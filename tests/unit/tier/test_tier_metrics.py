"""The tier's per-node gauges from a fake status, read back with prometheus_client's parser;
the lease timings from settings (file or environment) into the policy the watcher uses."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from lbaas.config import load_settings
from lbaas.errors import ConfigError
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.metrics import tier_registry

STATUS: dict[str, Any] = {
    "tier": True,
    "lease_store": "ok",
    "router": {"sessions": {"h1": "up Established", "h2": "start Active"}},
    "nodes": {
        "h1": {
            "announced": ["10.9.0.200/32", "10.9.0.201/32"],
            "bgp": "up Established",
            "lease": {"age_s": 0.31, "held": True},
        },
        "h2": {
            "announced": "unreachable",
            "bgp": "start Active",
            "lease": {"age_s": 7.5, "held": False},
        },
        "h3": {"announced": [], "bgp": "none", "lease": None},
    },
}


def _samples(status: dict[str, Any]) -> dict[tuple[str, str], float]:
    text = generate_latest(tier_registry(lambda: status)).decode()
    return {
        (sample.name, sample.labels.get("node", "")): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_per_node_gauges_parse_back() -> None:
    samples = _samples(STATUS)
    up = {n: samples[("lbaas_tier_node_up", n)] for n in ("h1", "h2", "h3")}
    assert up == {"h1": 1.0, "h2": 0.0, "h3": 0.0}
    assert samples[("lbaas_tier_node_lease_age_seconds", "h1")] == pytest.approx(0.31)
    assert samples[("lbaas_tier_node_lease_age_seconds", "h2")] == pytest.approx(7.5)
    assert samples[("lbaas_tier_node_announced_vips", "h1")] == 2.0
    assert samples[("lbaas_tier_node_announced_vips", "h3")] == 0.0
    bgp = {n: samples[("lbaas_tier_node_bgp_established", n)] for n in ("h1", "h2", "h3")}
    assert bgp == {"h1": 1.0, "h2": 0.0, "h3": 0.0}
    assert samples[("lbaas_tier_lease_store_up", "")] == 1.0


def test_unknown_figures_have_no_sample() -> None:
    samples = _samples(STATUS)
    assert ("lbaas_tier_node_lease_age_seconds", "h3") not in samples  # no lease row
    assert ("lbaas_tier_node_announced_vips", "h2") not in samples  # its BIRD is gone


def test_watcher_verdict_overrides_lease_and_store_outage_shows() -> None:
    status = {**STATUS, "lease_store": "unavailable"}
    status["nodes"] = {
        "h1": {**STATUS["nodes"]["h1"], "down": True},
        "h2": {**STATUS["nodes"]["h2"], "down": False},  # suspect but healthy: kept
    }
    samples = _samples(status)
    assert samples[("lbaas_tier_node_up", "h1")] == 0.0
    assert samples[("lbaas_tier_node_up", "h2")] == 1.0
    assert samples[("lbaas_tier_lease_store_up", "")] == 0.0


def test_lease_policy_from_settings_and_environment() -> None:
    assert LeasePolicy.from_settings(load_settings(environ={}).tier) == LeasePolicy(0.5, 3, 2, 1.0)
    environ = {
        "LBAAS_TIER__LEASE_RENEW_INTERVAL": "0.25",
        "LBAAS_TIER__LEASE_MISSED_RENEWALS": "4",
        "LBAAS_TIER__HEALTH_CHECK_TRIES": "3",
        "LBAAS_TIER__HEALTH_CHECK_TIMEOUT": "0.5",
    }
    policy = LeasePolicy.from_settings(load_settings(environ=environ).tier)
    assert policy == LeasePolicy(0.25, 4, 3, 0.5)
    assert policy.lifetime == pytest.approx(1.0)


@pytest.mark.parametrize(
    "variable", ["LBAAS_TIER__LEASE_RENEW_INTERVAL", "LBAAS_TIER__HEALTH_CHECK_TRIES"]
)
def test_bad_tier_settings_name_the_field(variable: str) -> None:
    with pytest.raises(ConfigError, match="tier"):
        load_settings(environ={variable: "0"})
