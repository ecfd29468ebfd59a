"""Availability zones and their profiles: catalogue tests plus data, uniqueness, in-use.

Zones are keyed by name (no ``id``), so the shared tests run with ``key = "name"``: the
markers, paths and filters all use names. The noop provider declares Octavia's zone keys
(``compute_zone``, ``volume_zone``, ``management_network``, ``valid_vip_networks``).
"""

from __future__ import annotations

import json
from typing import Any

from tests.api.catalog_base import CatalogTests
from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api

NIL_UUID = "00000000-0000-0000-0000-000000000000"
PROFILES = "/v2/lbaas/availabilityzoneprofiles"
ZONES = "/v2/lbaas/availabilityzones"
RACK = json.dumps({"compute_zone": "rack-1"})


def make_profile(admin: Api, **fields: Any) -> dict[str, Any]:
    body = {"name": "azp", "provider_name": "noop", "availability_zone_data": RACK, **fields}
    r = admin.post(PROFILES, {"availability_zone_profile": body})
    assert r.status_code == 201, r.text
    return dict(r.json()["availability_zone_profile"])


class TestAvailabilityZoneProfiles(CatalogTests):
    path = PROFILES
    wrapper = "availability_zone_profile"
    # Octavia's argument path for unknown attributes.
    argument = "availability_zone_profile_.availability_zone_profile"
    collection = "availability_zone_profiles"
    links_key = "availability_zone_profile_links"
    response_keys = frozenset({"id", "name", "provider_name", "availability_zone_data"})
    label = "Availability Zone Profile"
    required = ("name", "provider_name", "availability_zone_data")
    update_body = {"name": "renamed", "availability_zone_data": '{"compute_zone": "rack-2"}'}

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {"name": f"azp{n}", "provider_name": "noop", "availability_zone_data": RACK}

    def test_data_must_be_an_object_of_known_keys(self, admin: Api) -> None:
        for bad in ("{", "[]", '"rack"', '{"rack": "r"}', '{"compute_zone": "z", "rack": 1}'):
            body = {**self.body({}, 0), "availability_zone_data": bad}
            r = admin.post(PROFILES, {self.wrapper: body})
            assert_fault(r, 400, f"{bad} is not a valid option for availability_zone_data")
        body = {**self.body({}, 0), "provider_name": "amphora"}
        assert_fault(admin.post(PROFILES, {self.wrapper: body}), 400, "'amphora' is not enabled")
        assert self._snapshot(admin) == []

    def test_octavias_zone_keys_are_taken(self, admin: Api) -> None:
        """What octavia-tempest-plugin's zone profiles set, and Octavia's other zone keys."""
        data = {
            "compute_zone": "lbaas-az1",
            "volume_zone": "v1",
            "management_network": "1f5b0c6e-58a4-4d0f-9a3c-0d4f4b8d3f11",
            "valid_vip_networks": [],
        }
        body = {**self.body({}, 0), "availability_zone_data": json.dumps(data)}
        r = admin.post(PROFILES, {self.wrapper: body})
        assert r.status_code == 201, r.text
        shown = admin.get(self._one(r.json()[self.wrapper])).json()[self.wrapper]
        assert json.loads(shown["availability_zone_data"]) == data

    def test_null_on_put_is_refused(self, admin: Api) -> None:
        profile = self.make(admin, 0)
        for field in ("name", "provider_name", "availability_zone_data"):
            r = admin.put(self._one(profile), {self.wrapper: {field: None}})
            assert_fault(r, 400, f"None is not a valid option for {field}")

    def test_in_use_profile_is_frozen(self, admin: Api) -> None:
        profile = self.make(admin, 0)
        zone = {"name": "z1", "availability_zone_profile_id": profile["id"]}
        assert admin.post(ZONES, {"availability_zone": zone}).status_code == 201
        in_use = f"Availability Zone Profile {profile['id']} is in use and cannot be modified."
        path = self._one(profile)
        r = admin.put(path, {self.wrapper: {"availability_zone_data": "{}"}})
        assert_fault(r, 409, in_use)
        assert_fault(admin.delete(path), 409, in_use)
        assert admin.put(path, {self.wrapper: {"name": "kept"}}).status_code == 200
        assert admin.delete(f"{ZONES}/z1").status_code == 204
        assert admin.delete(path).status_code == 204


class TestAvailabilityZones(CatalogTests):
    path = ZONES
    wrapper = "availability_zone"
    # Octavia's argument path for unknown attributes.
    argument = "availability_zone_.availability_zone"
    collection = "availability_zones"
    links_key = "availability_zones_links"
    key = "name"
    response_keys = frozenset({"name", "description", "enabled", "availability_zone_profile_id"})
    label = "Availability Zone"
    required = ("name", "availability_zone_profile_id")
    create_only = ("name", "availability_zone_profile_id")
    update_body = {"description": "new", "enabled": False}
    readers_may_read = True

    def setup(self, admin: Api) -> dict[str, Any]:
        return {"profile_id": make_profile(admin)["id"]}

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {
            "name": f"zone-{n}",
            "description": f"row {n}",
            "enabled": True,
            "availability_zone_profile_id": ctx["profile_id"],
        }

    def test_name_is_unique(self, admin: Api) -> None:
        self.make(admin, 0)
        r = admin.post(ZONES, {"availability_zone": self.body(self._ctx(admin), 0)})
        assert_fault(r, 409, "A availability zone of zone-0 already exists.")

    def test_profile_must_exist(self, admin: Api) -> None:
        missing = "11111111-2222-4333-8444-555555555555"
        body = {**self.body(self._ctx(admin), 0), "availability_zone_profile_id": missing}
        assert_fault(
            admin.post(ZONES, {"availability_zone": body}),
            400,
            f"{missing} is not a valid option for availability_zone_profile_id",
        )

    def test_defaults_and_nulls(self, admin: Api) -> None:
        profile_id = self._ctx(admin)["profile_id"]
        r = admin.post(
            ZONES,
            {"availability_zone": {"name": "bare", "availability_zone_profile_id": profile_id}},
        )
        zone = r.json()["availability_zone"]
        assert zone == {
            "name": "bare",
            "description": "",
            "enabled": True,
            "availability_zone_profile_id": profile_id,
        }
        r = admin.put(f"{ZONES}/bare", {"availability_zone": {"enabled": None}})
        assert_fault(r, 400, "None is not a valid option for enabled")
        assert_fault(admin.get(f"{ZONES}/{NIL_UUID}"), 404, f"Availability Zone {NIL_UUID}")

    def test_in_use_by_a_load_balancer(self, api: Api, admin: Api) -> None:
        zone = self.make(admin, 0)
        lb = api.create_lb(availability_zone=zone["name"])
        assert lb["availability_zone"] == "zone-0"
        path = self._one(zone)
        assert_fault(
            admin.delete(path), 409, "Availability Zone zone-0 is in use and cannot be modified."
        )
        assert admin.put(path, {"availability_zone": {"enabled": False}}).status_code == 200
        r = api.post(
            "/v2/lbaas/loadbalancers",
            {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "availability_zone": "zone-0"}},
        )
        assert_fault(r, 400, "availability_zone is not allowed in this deployment: zone-0")
        assert api.delete(f"/v2/lbaas/loadbalancers/{lb['id']}").status_code == 204
        api.wait_lb(lb["id"], "DELETED")
        assert admin.delete(path).status_code == 204
