"""Flavors and flavor profiles: the shared catalogue tests plus data, uniqueness, in-use.

The noop provider declares one flavor key, ``loadbalancer_topology``; profiles are
checked against it.
"""

from __future__ import annotations

import json
from typing import Any

from tests.api.catalog_base import CatalogTests
from tests.api.resource_base import assert_fault
from tests.support.api_client import Api

NIL_UUID = "00000000-0000-0000-0000-000000000000"
PROFILES = "/v2/lbaas/flavorprofiles"
FLAVORS = "/v2/lbaas/flavors"
SINGLE = json.dumps({"loadbalancer_topology": "SINGLE"})


def make_profile(admin: Api, **fields: Any) -> dict[str, Any]:
    body = {"name": "fp", "provider_name": "noop", "flavor_data": SINGLE, **fields}
    r = admin.post(PROFILES, {"flavorprofile": body})
    assert r.status_code == 201, r.text
    return dict(r.json()["flavorprofile"])


def make_flavor(admin: Api, profile_id: str, **fields: Any) -> dict[str, Any]:
    body = {"name": "gold", "flavor_profile_id": profile_id, **fields}
    r = admin.post(FLAVORS, {"flavor": body})
    assert r.status_code == 201, r.text
    return dict(r.json()["flavor"])


class TestFlavorProfiles(CatalogTests):
    path = PROFILES
    wrapper = "flavorprofile"
    # Octavia's argument path for unknown attributes.
    argument = "flavor_profile_.flavorprofile"
    collection = "flavorprofiles"
    links_key = "flavorprofile_links"
    response_keys = frozenset({"id", "name", "provider_name", "flavor_data"})
    label = "Flavor profile"
    required = ("name", "provider_name", "flavor_data")
    update_body = {"name": "renamed", "flavor_data": '{"loadbalancer_topology": "ACTIVE_STANDBY"}'}

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {"name": f"fp{n}", "provider_name": "noop", "flavor_data": SINGLE}

    def test_flavor_data_must_be_an_object_of_known_keys(self, admin: Api) -> None:
        for bad in ("not json", "[1, 2]", "5", '{"compute_flavor": "m1"}', ""):
            r = admin.post(PROFILES, {"flavorprofile": {**self.body({}, 0), "flavor_data": bad}})
            assert_fault(r, 400, f"{bad} is not a valid option for flavor_data")
        too_long = json.dumps({"loadbalancer_topology": "x" * 4096})
        r = admin.post(PROFILES, {"flavorprofile": {**self.body({}, 0), "flavor_data": too_long}})
        assert_fault(r, 400, "flavor_data")
        r = admin.post(PROFILES, {"flavorprofile": {**self.body({}, 0), "flavor_data": "{}"}})
        assert r.status_code == 201
        assert self._snapshot(admin) == [r.json()["flavorprofile"]]

    def test_provider_must_be_enabled(self, admin: Api) -> None:
        r = admin.post(PROFILES, {"flavorprofile": {**self.body({}, 0), "provider_name": "nope"}})
        assert_fault(r, 400, "Provider 'nope' is not enabled.")
        profile = self.make(admin, 0)
        r = admin.put(self._one(profile), {"flavorprofile": {"provider_name": "nope"}})
        assert_fault(r, 400, "Provider 'nope' is not enabled.")
        r = admin.put(self._one(profile), {"flavorprofile": {"flavor_data": '{"x": 1}'}})
        assert_fault(r, 400, "is not a valid option for flavor_data")
        assert admin.get(self._one(profile)).json()["flavorprofile"] == profile

    def test_null_on_put_is_refused(self, admin: Api) -> None:
        profile = self.make(admin, 0)
        for field in ("name", "provider_name", "flavor_data"):
            r = admin.put(self._one(profile), {"flavorprofile": {field: None}})
            assert_fault(r, 400, f"None is not a valid option for {field}")

    def test_in_use_profile_is_frozen(self, admin: Api) -> None:
        profile = self.make(admin, 0)
        flavor = make_flavor(admin, profile["id"])
        in_use = f"Flavor profile {profile['id']} is in use and cannot be modified."
        path = self._one(profile)
        r = admin.put(path, {"flavorprofile": {"flavor_data": "{}"}})
        assert_fault(r, 409, in_use)
        assert_fault(admin.delete(path), 409, in_use)
        same = admin.put(path, {"flavorprofile": {"provider_name": "noop", "name": "kept"}})
        assert same.status_code == 200
        assert same.json()["flavorprofile"]["name"] == "kept"
        assert admin.delete(f"{FLAVORS}/{flavor['id']}").status_code == 204
        assert admin.put(path, {"flavorprofile": {"flavor_data": "{}"}}).status_code == 200
        assert admin.delete(path).status_code == 204

    def test_nil_uuid_is_never_found(self, admin: Api) -> None:
        assert_fault(admin.get(f"{PROFILES}/{NIL_UUID}"), 404, f"Flavor profile {NIL_UUID}")


class TestFlavors(CatalogTests):
    path = FLAVORS
    wrapper = "flavor"
    # Octavia's argument path for unknown attributes.
    argument = "flavor_.flavor"
    collection = "flavors"
    links_key = "flavors_links"
    response_keys = frozenset({"id", "name", "description", "enabled", "flavor_profile_id"})
    label = "Flavor"
    required = ("name", "flavor_profile_id")
    create_only = ("flavor_profile_id",)
    update_body = {"name": "renamed", "description": "new", "enabled": False}
    readers_may_read = True

    def setup(self, admin: Api) -> dict[str, Any]:
        return {"profile_id": make_profile(admin)["id"]}

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {
            "name": f"flavor{n}",
            "description": f"tier {n}",
            "enabled": True,
            "flavor_profile_id": ctx["profile_id"],
        }

    def test_defaults_and_coercion(self, admin: Api) -> None:
        profile_id = self._ctx(admin)["profile_id"]
        flavor = make_flavor(admin, profile_id, enabled="no")
        assert flavor["description"] == "" and flavor["enabled"] is False
        plain = make_flavor(admin, profile_id, name="plain")
        assert plain["enabled"] is True
        enabled = admin.get(FLAVORS, params={"enabled": "true"}).json()["flavors"]
        assert [f["id"] for f in enabled] == [plain["id"]]
        r = admin.post(
            FLAVORS, {"flavor": {**self.body({"profile_id": profile_id}, 9), "enabled": "maybe"}}
        )
        assert_fault(r, 400, "Value not an unambiguous boolean")

    def test_name_is_unique(self, admin: Api) -> None:
        first = self.make(admin, 0)
        second = self.make(admin, 1)
        r = admin.post(FLAVORS, {"flavor": self.body(self._ctx(admin), 0)})
        assert_fault(r, 409, "A flavor of flavor0 already exists.")
        r = admin.put(self._one(second), {"flavor": {"name": "flavor0"}})
        assert_fault(r, 409, "A flavor of flavor0 already exists.")
        same = admin.put(self._one(first), {"flavor": {"name": "flavor0"}})
        assert same.status_code == 200

    def test_profile_must_exist(self, admin: Api) -> None:
        missing = "11111111-2222-4333-8444-555555555555"
        body = {**self.body(self._ctx(admin), 0), "flavor_profile_id": missing}
        assert_fault(
            admin.post(FLAVORS, {"flavor": body}),
            400,
            f"{missing} is not a valid option for flavor_profile_id",
        )
        body["flavor_profile_id"] = "not-a-uuid"
        assert_fault(admin.post(FLAVORS, {"flavor": body}), 400, "Value should be UUID format")

    def test_null_on_put_is_refused(self, admin: Api) -> None:
        flavor = self.make(admin, 0)
        for field in ("name", "enabled"):
            r = admin.put(self._one(flavor), {"flavor": {field: None}})
            assert_fault(r, 400, f"None is not a valid option for {field}")
        cleared = admin.put(self._one(flavor), {"flavor": {"description": None}})
        assert cleared.json()["flavor"]["description"] == ""

    def test_in_use_by_a_load_balancer(self, api: Api, admin: Api) -> None:
        flavor = self.make(admin, 0)
        lb = api.create_lb(flavor_id=flavor["id"])
        assert lb["flavor_id"] == flavor["id"] and lb["provider"] == "noop"
        path = self._one(flavor)
        assert_fault(
            admin.delete(path), 409, f"Flavor {flavor['id']} is in use and cannot be modified."
        )
        assert admin.put(path, {"flavor": {"enabled": False}}).status_code == 200
        r = api.post(
            "/v2/lbaas/loadbalancers",
            {"loadbalancer": {"vip_subnet_id": lb["vip_subnet_id"], "flavor_id": flavor["id"]}},
        )
        assert_fault(r, 400, "The selected flavor is not allowed in this deployment")
        assert api.delete(f"/v2/lbaas/loadbalancers/{lb['id']}").status_code == 204
        api.wait_lb(lb["id"], "DELETED")
        assert admin.delete(path).status_code == 204

    def test_nil_uuid_is_never_found(self, admin: Api) -> None:
        path = f"{FLAVORS}/{NIL_UUID}"
        message = f"Flavor {NIL_UUID} not found."
        assert_fault(admin.get(path), 404, message)
        assert_fault(admin.put(path, {"flavor": {"name": "x"}}), 404, message)
        assert_fault(admin.delete(path), 404, message)
