"""Providers: the enabled list, and each provider's flavor and zone keys (admin only).

The suite's control plane enables only the noop provider, which declares one flavor key
and Octavia's four zone keys; the amphora provider (and its ``octavia`` alias) are not
enabled here.
"""

from __future__ import annotations

from tests.api.resource_base import assert_fault
from tests.support.api_client import Api

PROVIDERS = "/v2/lbaas/providers"
FLAVOR_CAPS = f"{PROVIDERS}/noop/flavor_capabilities"
ZONE_CAPS = f"{PROVIDERS}/noop/availability_zone_capabilities"


def test_list_providers_for_readers(api: Api) -> None:
    for caller in (api, api.as_("p-alpha", "reader")):
        r = caller.get(PROVIDERS)
        assert r.status_code == 200, r.text
        body = r.json()
        assert list(body) == ["providers"]
        assert [p["name"] for p in body["providers"]] == ["noop"]
        assert all(set(p) == {"name", "description"} for p in body["providers"])
        assert body["providers"][0]["description"]
    narrowed = api.get(PROVIDERS, params={"fields": "name"}).json()
    assert narrowed == {"providers": [{"name": "noop"}]}
    assert_fault(api.as_("p-alpha", "").get(PROVIDERS), 403, "Policy does not allow")


def test_flavor_capabilities(admin: Api) -> None:
    r = admin.get(FLAVOR_CAPS)
    assert r.status_code == 200, r.text
    caps = r.json()["flavor_capabilities"]
    assert [c["name"] for c in caps] == ["loadbalancer_topology"]
    assert set(caps[0]) == {"name", "description"}
    by_name = admin.get(FLAVOR_CAPS, params={"name": "loadbalancer_topology"}).json()
    assert by_name["flavor_capabilities"] == caps
    none = admin.get(FLAVOR_CAPS, params={"name": "compute_flavor"}).json()
    assert none == {"flavor_capabilities": []}
    by_text = admin.get(FLAVOR_CAPS, params={"description": caps[0]["description"]}).json()
    assert by_text["flavor_capabilities"] == caps
    only_names = admin.get(FLAVOR_CAPS, params={"fields": "name"}).json()
    assert only_names == {"flavor_capabilities": [{"name": "loadbalancer_topology"}]}


def test_availability_zone_capabilities(admin: Api) -> None:
    r = admin.get(ZONE_CAPS)
    assert r.status_code == 200, r.text
    caps = r.json()["availability_zone_capabilities"]
    names = ["compute_zone", "volume_zone", "management_network", "valid_vip_networks"]
    assert [c["name"] for c in caps] == names
    filtered = admin.get(ZONE_CAPS, params={"name": "volume_zone"}).json()
    assert filtered == {"availability_zone_capabilities": [caps[1]]}
    unknown = admin.get(ZONE_CAPS, params={"name": "rack"}).json()
    assert unknown == {"availability_zone_capabilities": []}


def test_capabilities_of_a_provider_not_enabled(admin: Api) -> None:
    for provider in ("amphora", "octavia", "bogus"):
        for kind in ("flavor_capabilities", "availability_zone_capabilities"):
            r = admin.get(f"{PROVIDERS}/{provider}/{kind}")
            assert_fault(r, 400, f"Provider '{provider}' is not enabled.")


def test_capabilities_are_admin_only(api: Api) -> None:
    for caller in (api, api.as_("p-alpha", "reader")):
        assert_fault(caller.get(FLAVOR_CAPS), 403, "Policy does not allow")
        assert_fault(caller.get(ZONE_CAPS), 403, "Policy does not allow")
