"""Member API: the shared CRUD tests, member rules, and the batch update (§5.4.1)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.resource_base import ResourceTests, assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.control_plane import noop_of

MEMBER_KEYS = {
    "id",
    "name",
    "operating_status",
    "provisioning_status",
    "admin_state_up",
    "address",
    "protocol_port",
    "weight",
    "backup",
    "subnet_id",
    "project_id",
    "tenant_id",
    "created_at",
    "updated_at",
    "monitor_address",
    "monitor_port",
    "tags",
    "vnic_type",
}
MISSING = "00000000-0000-4000-8000-00000000beef"


def members_path(pool_id: str) -> str:
    return f"/v2/lbaas/pools/{pool_id}/members"


def tree(api: Api) -> tuple[str, str]:
    lb = api.create_lb()
    pool = api.create_pool(lb["id"])
    return lb["id"], pool["id"]


def listed(api: Api, pool_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    body = api.get(members_path(pool_id)).json()["members"]
    return {(m["address"], m["protocol_port"]): m for m in body}


class TestMembers(ResourceTests):
    wrapper = "member"
    # Octavia's argument path for unknown attributes.
    argument = "member_.member"
    collection = "members"
    links_key = "members_links"
    update_body = {
        "name": "renamed",
        "weight": 5,
        "backup": True,
        "admin_state_up": False,
        "monitor_address": "192.0.2.99",
        "monitor_port": 8080,
    }
    create_only = ("address", "protocol_port", "subnet_id", "request_sriov")
    required = ("address", "protocol_port")

    def parents(self, api: Api) -> dict[str, Any]:
        lb_id, pool_id = tree(api)
        return {"lb_id": lb_id, "pool_id": pool_id}

    def collection_path(self, ctx: dict[str, Any]) -> str:
        return members_path(ctx["pool_id"])

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {"address": f"192.0.2.{10 + n}", "protocol_port": 80, "name": f"m{n}"}

    # -- single members -----------------------------------------------------------------------

    def test_response_shape_and_defaults(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        r = api.post(
            members_path(pool_id), {"member": {"address": "192.0.2.1", "protocol_port": "8080"}}
        )
        assert r.status_code == 201, r.text
        member = r.json()["member"]
        assert set(member) == MEMBER_KEYS
        assert member["protocol_port"] == 8080
        assert member["weight"] == 1 and member["backup"] is False
        assert member["operating_status"] == "NO_MONITOR"
        assert member["vnic_type"] == "normal"
        assert member["name"] == "" and member["subnet_id"] is None
        assert member["monitor_address"] is None and member["monitor_port"] is None
        api.wait_lb(lb_id)
        pool = api.get(f"/v2/lbaas/pools/{pool_id}").json()["pool"]
        assert pool["members"] == [{"id": member["id"]}]

    def test_monitored_pool_members_start_offline(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        api.create_healthmonitor(lb_id, pool_id)
        r = api.post(
            members_path(pool_id), {"member": {"address": "192.0.2.1", "protocol_port": 80}}
        )
        assert r.json()["member"]["operating_status"] == "OFFLINE"
        api.wait_lb(lb_id)

    def test_address_rules(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        path = members_path(pool_id)
        api.create_member(lb_id, pool_id, address="192.0.2.10", protocol_port=80)
        cases = [
            (
                {"address": "169.254.169.254", "protocol_port": 80},
                400,
                "169.254.169.254 is not a valid option for member address",
            ),
            ({"address": "192.0.2.300", "protocol_port": 80}, 400, "IPv4 or IPv6 format"),
            ({"address": "192.0.2.1", "protocol_port": 0}, 400, "protocol_port"),
            ({"address": "192.0.2.1", "protocol_port": 80, "weight": 257}, 400, "weight"),
            ({"address": "192.0.2.1", "protocol_port": 80, "weight": -1}, 400, "weight"),
            (
                {"address": "192.0.2.1", "protocol_port": 80, "subnet_id": MISSING},
                400,
                f"Subnet {MISSING} not found.",
            ),
            (
                {"address": "192.0.2.1", "protocol_port": 80, "request_sriov": True},
                400,
                "Validation failure: The load balancer flavor does not allow SR-IOV member ports.",
            ),
            (
                {"address": "192.0.2.10", "protocol_port": 80},
                409,
                "Another member on this pool is already using ip 192.0.2.10 on protocol_port 80",
            ),
        ]
        for body, status, message in cases:
            assert_fault(api.post(path, {"member": body}), status, message)
        assert len(listed(api, pool_id)) == 1
        other = api.create_member(
            lb_id, pool_id, address="192.0.2.10", protocol_port=81, subnet_id=LOOPBACK_SUBNET
        )
        assert other["subnet_id"] == LOOPBACK_SUBNET

    def test_reserved_ipv6_is_compared_normalised(self, api: Api, plane: Any) -> None:
        lb_id, pool_id = tree(api)
        reserved = plane.settings.network.reserved_member_addresses
        assert "169.254.169.254" in reserved
        r = api.post(
            members_path(pool_id),
            {"member": {"address": "2001:DB8:0:0::1", "protocol_port": 80, "weight": 0}},
        )
        assert r.status_code == 201, r.text
        assert r.json()["member"]["address"] == "2001:db8::1"
        api.wait_lb(lb_id)

    def test_update_null_resets_defaults(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        member = api.create_member(
            lb_id, pool_id, weight=7, backup=True, monitor_address="192.0.2.50", monitor_port=9000
        )
        path = f"{members_path(pool_id)}/{member['id']}"
        body = {"weight": None, "backup": None, "monitor_address": None, "monitor_port": None}
        r = api.put(path, {"member": body})
        assert r.status_code == 200, r.text
        got = r.json()["member"]
        assert (got["weight"], got["backup"]) == (1, False)
        assert got["monitor_address"] is None and got["monitor_port"] is None
        assert got["provisioning_status"] == "PENDING_UPDATE"
        api.wait_lb(lb_id)

    def test_member_of_other_pool_is_404(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        other_pool = api.create_pool(lb_id)["id"]
        member = api.create_member(lb_id, pool_id)
        wrong = f"{members_path(other_pool)}/{member['id']}"
        assert_fault(api.get(wrong), 404, f"Member {member['id']} not found.")
        assert_fault(api.delete(wrong), 404, "not found")
        assert_fault(api.get(members_path(MISSING)), 404, f"Pool {MISSING} not found.")
        body = {"member": {"address": "192.0.2.1", "protocol_port": 80}}
        assert_fault(api.post(members_path(MISSING), body), 404, f"Pool {MISSING} not found.")

    def test_locks_pool_and_listener(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])
        pool = api.create_pool(lb["id"], listener_id=listener["id"])
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            r = api.post(
                members_path(pool["id"]), {"member": {"address": "192.0.2.1", "protocol_port": 80}}
            )
            assert r.status_code == 201
            got = api.get(f"/v2/lbaas/pools/{pool['id']}").json()["pool"]
            assert got["provisioning_status"] == "PENDING_UPDATE"
            got = api.get(f"/v2/lbaas/listeners/{listener['id']}").json()["listener"]
            assert got["provisioning_status"] == "PENDING_UPDATE"
            again = {"member": {"address": "192.0.2.2", "protocol_port": 80}}
            assert_fault(
                api.post(members_path(pool["id"]), again),
                409,
                f"Pool {pool['id']} is immutable and cannot be updated.",
            )
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])
        assert len(listed(api, pool["id"])) == 1

    def test_service_role_lists_any_pool(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        member = api.create_member(lb_id, pool_id)
        service = api.as_("p-telemetry", "service")
        r = service.get(members_path(pool_id))
        assert r.status_code == 200
        assert [m["id"] for m in r.json()["members"]] == [member["id"]]
        assert_fault(service.get(f"{members_path(pool_id)}/{member['id']}"), 403)

    def test_list_filters(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        a = api.create_member(lb_id, pool_id, address="192.0.2.1", protocol_port=80)
        b = api.create_member(lb_id, pool_id, address="192.0.2.2", protocol_port=81, backup=True)

        def ids(**params: Any) -> list[str]:
            body = api.get(members_path(pool_id), params=params).json()
            return [m["id"] for m in body["members"]]

        assert ids(address="192.0.2.1") == [a["id"]]
        assert ids(protocol_port="81") == [b["id"]]
        assert ids(backup="true") == [b["id"]]
        assert ids(weight="1") == [a["id"], b["id"]]
        assert ids(sort="protocol_port:desc") == [b["id"], a["id"]]
        assert_fault(api.get(members_path(pool_id), params={"weight": "x"}), 400, "invalid")

    # -- batch update ---------------------------------------------------------------------------

    def test_batch_creates_updates_and_deletes(self, api: Api, plane: Any) -> None:
        lb_id, pool_id = tree(api)
        keep = api.create_member(
            lb_id,
            pool_id,
            address="192.0.2.1",
            name="keep",
            weight=9,
            backup=True,
            monitor_port=8080,
            tags=["t"],
        )
        drop = api.create_member(lb_id, pool_id, address="192.0.2.2")
        body = {
            "members": [
                {"address": "192.0.2.1", "protocol_port": 80},
                {"address": "192.0.2.3", "protocol_port": 80, "weight": 3, "name": "new"},
            ]
        }
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            r = api.put(members_path(pool_id), body)
            assert r.status_code == 202, r.text
            assert r.content == b""
            now = listed(api, pool_id)
            assert now[("192.0.2.1", 80)]["provisioning_status"] == "PENDING_UPDATE"
            assert now[("192.0.2.2", 80)]["provisioning_status"] == "PENDING_DELETE"
            assert now[("192.0.2.3", 80)]["provisioning_status"] == "PENDING_CREATE"
            pool = api.get(f"/v2/lbaas/pools/{pool_id}").json()["pool"]
            assert pool["provisioning_status"] == "PENDING_UPDATE"
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb_id)
        after = listed(api, pool_id)
        assert set(after) == {("192.0.2.1", 80), ("192.0.2.3", 80)}
        kept = after[("192.0.2.1", 80)]
        assert kept["id"] == keep["id"]
        assert (kept["weight"], kept["backup"], kept["monitor_port"]) == (1, False, None)
        assert (kept["name"], kept["tags"]) == ("keep", ["t"])
        assert after[("192.0.2.3", 80)]["weight"] == 3
        assert_fault(api.get(f"{members_path(pool_id)}/{drop['id']}"), 404)

    def test_batch_additive_only_keeps_others(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        api.create_member(lb_id, pool_id, address="192.0.2.1")
        old = listed(api, pool_id)[("192.0.2.1", 80)]
        body = {"members": [{"address": "192.0.2.5", "protocol_port": 80}]}
        r = api.put(members_path(pool_id), body, params={"additive_only": "True"})
        assert r.status_code == 202
        assert listed(api, pool_id)[("192.0.2.1", 80)] == old
        api.wait_lb(lb_id)
        after = listed(api, pool_id)
        assert set(after) == {("192.0.2.1", 80), ("192.0.2.5", 80)}
        assert after[("192.0.2.1", 80)]["id"] == old["id"]

    def test_batch_nothing_to_change_is_a_noop(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        assert api.put(members_path(pool_id), {"members": []}).status_code == 202
        member = api.create_member(lb_id, pool_id)
        before = api.get(f"/v2/lbaas/loadbalancers/{lb_id}").json()["loadbalancer"]
        r = api.put(members_path(pool_id), {"members": []}, params={"additive_only": "true"})
        assert r.status_code == 202
        after = api.get(f"/v2/lbaas/loadbalancers/{lb_id}").json()["loadbalancer"]
        assert after["provisioning_status"] == "ACTIVE"
        assert after["updated_at"] == before["updated_at"]
        assert listed(api, pool_id)[("192.0.2.10", 80)]["id"] == member["id"]

    def test_batch_errors_change_nothing(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        api.create_member(lb_id, pool_id, address="192.0.2.1")
        before = listed(api, pool_id)
        path = members_path(pool_id)
        dup = {"address": "192.0.2.7", "protocol_port": 80}
        cases = [
            (
                {"members": [dup, dup]},
                400,
                "Validation failure: Member must be updated only once in the same request.",
            ),
            (
                {"members": [{"address": "169.254.169.254", "protocol_port": 80}]},
                400,
                "169.254.169.254 is not a valid option for member address",
            ),
            (
                {"members": [{**dup, "subnet_id": MISSING}]},
                400,
                f"Subnet {MISSING} not found.",
            ),
            ({"members": [{"address": "192.0.2.7"}]}, 400, "Mandatory field missing"),
            ({"members": [{**dup, "bogus": 1}]}, 400, "Unknown attribute"),
        ]
        for body, status, message in cases:
            assert_fault(api.put(path, body), status, message)
        assert listed(api, pool_id) == before
        lb = api.get(f"/v2/lbaas/loadbalancers/{lb_id}").json()["loadbalancer"]
        assert lb["provisioning_status"] == "ACTIVE"
        reader = api.as_("p-alpha", "reader")
        assert_fault(reader.put(path, {"members": [dup]}), 403, "Policy")
        assert_fault(api.put(members_path(MISSING), {"members": []}), 404, "Pool")

    def test_batch_needs_active_pool(self, api: Api, plane: Any) -> None:
        lb_id, pool_id = tree(api)
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            assert api.put(f"/v2/lbaas/pools/{pool_id}", {"pool": {"name": "x"}}).status_code == 200
            body = {"members": [{"address": "192.0.2.7", "protocol_port": 80}]}
            assert_fault(api.put(members_path(pool_id), body), 409, "is immutable")
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb_id)
        assert listed(api, pool_id) == {}


class TestMemberQuota:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"quota": {"member": 2}}

    def test_quota_counts_net_increase(self, api: Api) -> None:
        lb_id, pool_id = tree(api)
        api.create_member(lb_id, pool_id, address="192.0.2.1")
        api.create_member(lb_id, pool_id, address="192.0.2.2")
        body = {"member": {"address": "192.0.2.3", "protocol_port": 80}}
        assert_fault(
            api.post(members_path(pool_id), body), 403, "Quota has been met for resources: Member"
        )
        swap = {
            "members": [
                {"address": "192.0.2.1", "protocol_port": 80},
                {"address": "192.0.2.9", "protocol_port": 80},
            ]
        }
        assert api.put(members_path(pool_id), swap).status_code == 202
        api.wait_lb(lb_id)
        grow = {"members": [*swap["members"], {"address": "192.0.2.8", "protocol_port": 80}]}
        assert_fault(api.put(members_path(pool_id), grow), 403, "Member")
        r = api.put(
            members_path(pool_id), {"members": grow["members"][:1]}, params={"additive_only": "1"}
        )
        assert r.status_code == 202
        api.wait_lb(lb_id)
        assert set(listed(api, pool_id)) == {("192.0.2.1", 80), ("192.0.2.9", 80)}
