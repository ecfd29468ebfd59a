"""Quotas: stored records vs effective limits, defaults, aliases, RBAC and enforcement.

The list behaviour comes from the catalogue base (records are keyed by ``project_id``);
the rest is specific: PUT and DELETE answer 202, reads of one project fill defaults in,
both spellings of two limits are accepted and returned, and a project at its limit gets
Octavia's 403 while other projects carry on.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.catalog_base import CatalogListTests
from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api

QUOTAS = "/v2/lbaas/quotas"
KINDS = ("loadbalancer", "listener", "pool", "member", "healthmonitor", "l7policy", "l7rule")
ALL_KEYS = {*KINDS, "load_balancer", "health_monitor"}


def unlimited(**changes: int | None) -> dict[str, int | None]:
    limits: dict[str, int | None] = dict.fromkeys(ALL_KEYS, -1)
    limits.update(changes)
    limits["load_balancer"] = limits["loadbalancer"]
    limits["health_monitor"] = limits["healthmonitor"]
    return limits


def owned(project: str, limits: dict[str, int | None]) -> dict[str, Any]:
    # Octavia's QuotaResponse: project_id, its tenant_id twin and the limits.
    return {**limits, "project_id": project, "tenant_id": project}


class TestQuotaList(CatalogListTests):
    path = QUOTAS
    collection = "quotas"
    links_key = "quotas_links"
    key = "project_id"
    filter_field = "project_id"

    def make(self, admin: Api, n: int) -> dict[str, Any]:
        r = admin.put(f"{QUOTAS}/p-q{n}", {"quota": {"pool": n}})
        assert r.status_code == 202, r.text
        return dict(r.json()["quota"])


def test_effective_quota_of_a_project_without_record(api: Api) -> None:
    r = api.get(f"{QUOTAS}/p-alpha")
    assert r.status_code == 200, r.text
    assert r.json() == {"quota": owned("p-alpha", unlimited())}


def test_put_returns_202_with_effective_limits(admin: Api) -> None:
    r = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"loadbalancer": 5, "listener": "10"}})
    assert r.status_code == 202, r.text
    assert r.json() == {"quota": owned("p-alpha", unlimited(loadbalancer=5, listener=10))}
    r = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"load_balancer": 7, "health_monitor": 0}})
    expected = owned("p-alpha", unlimited(loadbalancer=7, listener=10, healthmonitor=0))
    assert r.json() == {"quota": expected}
    assert admin.get(f"{QUOTAS}/p-alpha").json() == {"quota": expected}
    both = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"loadbalancer": 3, "load_balancer": 4}})
    assert both.json()["quota"]["loadbalancer"] == 3


def test_a_boolean_limit_is_0_or_1_and_the_document_says_so(admin: Api) -> None:
    r = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": False, "member": True}})
    assert r.status_code == 202, r.text
    assert r.json() == {"quota": owned("p-alpha", unlimited(pool=0, member=1))}
    document = admin.get("/openapi.json").json()
    limit = document["components"]["schemas"]["QuotaUpdate"]["properties"]["pool"]
    assert {"type": "boolean"} in limit["anyOf"]


def test_null_reverts_to_the_default(admin: Api) -> None:
    admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": 3, "member": 4}})
    r = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": None}})
    assert r.json()["quota"] == owned("p-alpha", unlimited(member=4))
    stored = admin.get(QUOTAS, params={"project_id": "p-alpha"}).json()["quotas"]
    assert stored == [owned("p-alpha", {**dict.fromkeys(ALL_KEYS, None), "member": 4})]


def test_bad_values_are_400_and_change_nothing(admin: Api) -> None:
    admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": 3}})
    before = admin.get(QUOTAS).json()
    for bad in (-2, 2_000_000_001, 1.5, [1]):
        r = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": bad}})
        assert_fault(r, 400, "Invalid input for field/attribute pool.")
    # A value WSME cannot convert is reported against the whole body argument.
    r = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": "many"}})
    assert r.json()["faultstring"] == (
        "Invalid input for field/attribute quotas. Value: '{'quota': {'pool': 'many'}}'. "
        "invalid literal for int() with base 10: 'many'"
    )
    r = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pools": 1}})
    assert_fault(r, 400, "Unknown attribute for argument quotas.quota: pools")
    assert_fault(admin.put(f"{QUOTAS}/p-alpha", {"pool": 1}), 400)
    assert_fault(admin.put(f"{QUOTAS}/{'p' * 37}", {"quota": {"pool": 1}}), 400, "project_id")
    assert admin.get(QUOTAS).json() == before
    edge = admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": 2_000_000_000, "member": -1}})
    assert edge.status_code == 202


def test_delete_resets_to_defaults_and_keeps_the_record(admin: Api) -> None:
    admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": 3}})
    r = admin.delete(f"{QUOTAS}/p-alpha")
    assert r.status_code == 202 and r.content == b""
    assert admin.get(f"{QUOTAS}/p-alpha").json() == {"quota": owned("p-alpha", unlimited())}
    # A record with no limit of its own is not listed.
    assert admin.get(QUOTAS).json()["quotas"] == []
    assert admin.delete(f"{QUOTAS}/p-alpha").status_code == 202
    assert_fault(admin.delete(f"{QUOTAS}/p-none"), 404, "Quotas p-none not found.")


def test_list_scoping_and_rbac(api: Api, admin: Api) -> None:
    for project in ("p-alpha", "p-beta"):
        assert admin.put(f"{QUOTAS}/{project}", {"quota": {"pool": 1}}).status_code == 202
    reader = api.as_("p-alpha", "reader")
    for caller in (api, reader):
        mine = caller.get(QUOTAS).json()["quotas"]
        assert [q["project_id"] for q in mine] == ["p-alpha"]
        assert caller.get(f"{QUOTAS}/p-alpha").status_code == 200
        assert caller.get(f"{QUOTAS}/p-alpha/default").status_code == 200
        assert_fault(caller.get(QUOTAS, params={"project_id": "p-beta"}), 403)
        assert_fault(caller.get(f"{QUOTAS}/p-beta"), 403, "Policy does not allow")
        assert_fault(caller.get(f"{QUOTAS}/p-beta/default"), 403)
        assert_fault(caller.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": 9}}), 403)
        assert_fault(caller.delete(f"{QUOTAS}/p-alpha"), 403)
    every = admin.get(QUOTAS).json()["quotas"]
    assert [q["project_id"] for q in every] == ["p-alpha", "p-beta"]
    nobody = api.as_("p-alpha", "")
    assert_fault(nobody.get(QUOTAS), 403)
    assert_fault(nobody.get(f"{QUOTAS}/p-alpha"), 403)
    assert_fault(nobody.get(f"{QUOTAS}/defaults"), 403)
    assert admin.get(f"{QUOTAS}/p-alpha").json()["quota"]["pool"] == 1


class TestConfiguredDefaults:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"quota": {"loadbalancer": 7, "member": 100}}

    def test_defaults_routes(self, api: Api) -> None:
        defaults = unlimited(loadbalancer=7, member=100)
        for caller in (api, api.as_("p-alpha", "reader")):
            r = caller.get(f"{QUOTAS}/defaults")
            assert r.status_code == 200, r.text
            # Octavia serves this path as the quota of a project named "defaults".
            assert r.json() == {"quota": owned("defaults", defaults)}
            own = caller.get(f"{QUOTAS}/p-alpha/default").json()
            assert own == {"quota": owned("p-alpha", defaults)}

    def test_defaults_fill_unset_limits(self, api: Api, admin: Api) -> None:
        admin.put(f"{QUOTAS}/p-alpha", {"quota": {"member": 5}})
        quota = api.get(f"{QUOTAS}/p-alpha").json()["quota"]
        assert quota == owned("p-alpha", unlimited(loadbalancer=7, member=5))
        assert admin.get(f"{QUOTAS}/p-alpha/default").json()["quota"]["member"] == 100


class TestDeprecatedQuotaAdminRole:
    """With the old defaults honoured, ``load-balancer_quota_admin`` manages every quota."""

    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"api": {"enforce_new_defaults": False}}

    def test_quota_admin(self, api: Api) -> None:
        quota_admin = api.as_("p-ops", "load-balancer_quota_admin")
        r = quota_admin.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": 2}})
        assert r.status_code == 202, r.text
        assert quota_admin.get(f"{QUOTAS}/p-alpha").json()["quota"]["pool"] == 2
        assert [q["project_id"] for q in quota_admin.get(QUOTAS).json()["quotas"]] == ["p-alpha"]
        assert quota_admin.delete(f"{QUOTAS}/p-alpha").status_code == 202
        assert_fault(
            quota_admin.get("/v2/lbaas/loadbalancers", params={"project_id": "p-alpha"}), 403
        )
        observer = api.as_("p-ops", "load-balancer_global_observer")
        assert observer.get(f"{QUOTAS}/p-alpha").status_code == 200
        assert_fault(observer.put(f"{QUOTAS}/p-alpha", {"quota": {"pool": 1}}), 403)


def test_project_at_its_limit_gets_403(api: Api, admin: Api) -> None:
    admin.put(f"{QUOTAS}/p-alpha", {"quota": {"loadbalancer": 1}})
    api.create_lb()
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    before = api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"]
    r = api.post("/v2/lbaas/loadbalancers", body)
    assert_fault(r, 403, "Quota has been met for resources: Load Balancer")
    assert api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"] == before
    other = api.as_("p-beta", "member")
    other.create_lb()
    other.create_lb()
    admin.put(f"{QUOTAS}/p-alpha", {"quota": {"loadbalancer": None}})
    assert api.post("/v2/lbaas/loadbalancers", body).status_code == 201


def test_zero_allows_none_and_deleted_objects_do_not_count(api: Api, admin: Api) -> None:
    lb = api.create_lb()
    admin.put(f"{QUOTAS}/p-alpha", {"quota": {"load_balancer": 1}})
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    assert_fault(api.post("/v2/lbaas/loadbalancers", body), 403, "Load Balancer")
    assert api.delete(f"/v2/lbaas/loadbalancers/{lb['id']}").status_code == 204
    api.wait_lb(lb["id"], "DELETED")
    api.create_lb()
    admin.put(f"{QUOTAS}/p-beta", {"quota": {"loadbalancer": 0}})
    other = api.as_("p-beta", "member")
    assert_fault(other.post("/v2/lbaas/loadbalancers", body), 403, "Load Balancer")
