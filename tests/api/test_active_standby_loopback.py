"""ACTIVE_STANDBY with loopback agents (no root, no namespaces) is a clear 400, changing nothing.

Whether the topology comes from a flavor profile or from the configured default
(``providers.loadbalancer_topology``), the answer names netns mode, in Octavia's error shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api_client import LOOPBACK_SUBNET, Api

AMPHORA_LOOPBACK = {"providers": {"enabled": ["amphora", "noop"], "default": "amphora"}}


class TestFlavorProfile:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return AMPHORA_LOOPBACK

    def test_an_active_standby_profile_is_refused_naming_netns(self, admin: Api) -> None:
        body = {
            "flavorprofile": {
                "name": "ha",
                "provider_name": "amphora",
                "flavor_data": '{"loadbalancer_topology": "ACTIVE_STANDBY"}',
            }
        }
        refused = admin.post("/v2/lbaas/flavorprofiles", body)
        assert refused.status_code == 400, refused.text
        assert "netns mode" in refused.json()["faultstring"]
        assert admin.get("/v2/lbaas/flavorprofiles").json()["flavorprofiles"] == []
        body["flavorprofile"]["flavor_data"] = '{"loadbalancer_topology": "SINGLE"}'
        assert admin.post("/v2/lbaas/flavorprofiles", body).status_code == 201


class TestConfiguredDefault:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        providers = {**AMPHORA_LOOPBACK["providers"], "loadbalancer_topology": "ACTIVE_STANDBY"}
        return {"providers": providers}

    def test_a_load_balancer_is_refused_and_nothing_is_created(self, api: Api) -> None:
        refused = api.post(
            "/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
        )
        assert refused.status_code == 400, refused.text
        assert "netns mode" in refused.json()["faultstring"]
        assert api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"] == []
        # The noop provider records topologies only: it takes the default as it is.
        created = api.post(
            "/v2/lbaas/loadbalancers",
            {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "provider": "noop"}},
        )
        assert created.status_code == 201, created.text
