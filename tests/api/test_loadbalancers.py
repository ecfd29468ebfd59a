"""Load balancer API: the shared CRUD tests plus VIP, cascade, status, stats, failover."""

from __future__ import annotations

from typing import Any

from tests.api.resource_base import ResourceTests, assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.control_plane import noop_of
from tests.support.fake_providers import provider_declaring

LOOPBACK_NETWORK = "7f000a00-0000-4000-8000-000000000000"


class TestLoadBalancers(ResourceTests):
    wrapper = "loadbalancer"
    # Octavia's argument path for unknown attributes.
    argument = "load_balancer.loadbalancer"
    collection = "loadbalancers"
    links_key = "loadbalancers_links"
    update_body = {"name": "renamed", "description": "new", "admin_state_up": False}
    create_only = ("vip_subnet_id", "vip_address", "provider", "flavor_id")

    def parents(self, api: Api) -> dict[str, Any]:
        return {}

    def collection_path(self, ctx: dict[str, Any]) -> str:
        return "/v2/lbaas/loadbalancers"

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        return {"name": f"lb{n}", "vip_subnet_id": LOOPBACK_SUBNET}

    def _create(self, api: Api, ctx: dict[str, Any], n: int = 0, **extra: Any) -> dict[str, Any]:
        r = api.post(self.collection_path(ctx), {self.wrapper: {**self.body(ctx, n), **extra}})
        assert r.status_code == 201, r.text
        obj = dict(r.json()[self.wrapper])
        ctx["lb_id"] = obj["id"]
        api.wait_lb(obj["id"])
        return obj

    def test_create_is_pending_then_active(self, api: Api) -> None:
        r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": self.body({}, 0)})
        assert r.status_code == 201
        lb = r.json()["loadbalancer"]
        assert lb["provisioning_status"] == "PENDING_CREATE"
        assert lb["operating_status"] == "OFFLINE"
        assert lb["vip_subnet_id"] == LOOPBACK_SUBNET
        assert lb["vip_network_id"] == LOOPBACK_NETWORK
        assert lb["vip_address"].startswith("127.0.10.")
        assert lb["vip_port_id"]
        active = api.wait_lb(lb["id"])
        assert active["operating_status"] == "ONLINE"
        assert active["updated_at"] is not None

    def test_bad_input_is_400_and_changes_nothing(self, api: Api) -> None:
        before = self._snapshot(api, {})
        assert_fault(
            api.post("/v2/lbaas/loadbalancers", {"loadbalancer": {"name": "x"}}),
            400,
            "VIP must contain one of",
        )
        assert_fault(
            api.post("/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": "nope"}}),
            400,
            "UUID format",
        )
        missing = "11111111-2222-4333-8444-555555555555"
        assert_fault(
            api.post("/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": missing}}),
            400,
            f"Subnet {missing} not found.",
        )
        assert_fault(
            api.post(
                "/v2/lbaas/loadbalancers",
                {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "provider": "nope"}},
            ),
            400,
            "Provider 'nope' is not enabled.",
        )
        assert_fault(
            api.post(
                "/v2/lbaas/loadbalancers",
                {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "vip_address": "10.0.0.1"}},
            ),
            400,
        )
        assert_fault(
            api.post(
                "/v2/lbaas/loadbalancers",
                {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "bogus": 1}},
            ),
            400,
            "Unknown attribute for argument load_balancer.loadbalancer: bogus",
        )
        assert self._snapshot(api, {}) == before

    def test_vip_qos_policy_is_refused_saying_why_and_what_instead(self, api: Api) -> None:
        policy = "11111111-2222-4333-8444-555555555555"
        before = self._snapshot(api, {})
        refused = api.post(
            "/v2/lbaas/loadbalancers",
            {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "vip_qos_policy_id": policy}},
        )
        assert_fault(refused, 400, "lbaas enforces no QoS policies")
        assert "connection_limit" in refused.json()["faultstring"]
        assert self._snapshot(api, {}) == before
        lb = api.create_lb()
        path = f"/v2/lbaas/loadbalancers/{lb['id']}"
        assert_fault(
            api.put(path, {"loadbalancer": {"vip_qos_policy_id": policy}}),
            400,
            "vip_qos_policy_id is not supported",
        )
        cleared = api.put(path, {"loadbalancer": {"vip_qos_policy_id": None}})
        assert cleared.status_code == 200, cleared.text
        assert cleared.json()["loadbalancer"]["vip_qos_policy_id"] is None

    def test_409_while_load_balancer_pending(self, api: Api, plane: Any) -> None:
        ctx: dict[str, Any] = {}
        lb = self._create(api, ctx)
        noop_of(plane).gate.clear()  # converges wait until reopened
        try:
            path = f"/v2/lbaas/loadbalancers/{lb['id']}"
            assert api.put(path, {"loadbalancer": {"name": "x"}}).status_code == 200
            assert_fault(
                api.put(path, {"loadbalancer": {"name": "y"}}),
                409,
                f"Invalid state PENDING_UPDATE of loadbalancer resource {lb['id']}",
            )
            assert_fault(api.delete(path), 409, "Invalid state")
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(lb["id"])

    def test_vip_by_network_and_address(self, api: Api) -> None:
        lb = api.create_lb(vip_network_id=LOOPBACK_NETWORK, vip_address="127.0.10.77")
        assert lb["vip_address"] == "127.0.10.77"
        assert lb["vip_subnet_id"] == LOOPBACK_SUBNET
        r = api.post(
            "/v2/lbaas/loadbalancers",
            {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET, "vip_address": "127.0.10.77"}},
        )
        assert_fault(r, 409, "The VIP IP address is already in use")

    def test_delete_with_children_needs_cascade(self, api: Api) -> None:
        lb = api.create_lb()
        api.create_listener(lb["id"])
        path = f"/v2/lbaas/loadbalancers/{lb['id']}"
        assert_fault(api.delete(path), 400, "it has children")
        assert api.delete(path, params={"cascade": "True"}).status_code == 204
        api.wait_lb(lb["id"], "DELETED")

    def test_vip_released_on_delete(self, api: Api) -> None:
        lb = api.create_lb(vip_address="127.0.10.99")
        assert api.delete(f"/v2/lbaas/loadbalancers/{lb['id']}").status_code == 204
        api.wait_lb(lb["id"], "DELETED")
        again = api.create_lb(vip_address="127.0.10.99")
        assert again["vip_address"] == "127.0.10.99"

    def test_stats_and_status_tree(self, api: Api) -> None:
        lb = api.create_lb(name="web")
        stats = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}/stats").json()
        assert stats == {
            "stats": {
                "bytes_in": 0,
                "bytes_out": 0,
                "active_connections": 0,
                "total_connections": 0,
                "request_errors": 0,
            }
        }
        tree = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}/status").json()
        assert tree["statuses"]["loadbalancer"]["name"] == "web"
        assert tree["statuses"]["loadbalancer"]["listeners"] == []

    def test_failover_is_admin_only_and_202(self, api: Api, admin: Api, plane: Any) -> None:
        lb = api.create_lb()
        path = f"/v2/lbaas/loadbalancers/{lb['id']}/failover"
        assert_fault(api.put(path), 403)
        assert admin.put(path).status_code == 202
        api.wait_lb(lb["id"])
        assert any(c.action == "rebuild" for c in noop_of(plane).calls)

    def test_project_from_body_needs_admin(self, api: Api, admin: Api) -> None:
        body = {"vip_subnet_id": LOOPBACK_SUBNET, "project_id": "p-other"}
        assert_fault(api.post("/v2/lbaas/loadbalancers", {"loadbalancer": body}), 403)
        r = admin.post("/v2/lbaas/loadbalancers", {"loadbalancer": body})
        assert r.status_code == 201
        assert r.json()["loadbalancer"]["project_id"] == "p-other"

    def test_delete_then_404(self, api: Api) -> None:
        lb = self._create(api, {})
        assert api.delete(f"/v2/lbaas/loadbalancers/{lb['id']}").status_code == 204
        api.wait_lb(lb["id"], "DELETED")
        assert_fault(api.get(f"/v2/lbaas/loadbalancers/{lb['id']}"), 404, "not found")
        assert lb["id"] not in {o["id"] for o in self._snapshot(api, {})}


LBS_PATH = "/v2/lbaas/loadbalancers"


def test_additional_vips_a_provider_cannot_bind_are_refused(api: Api, plane: Any) -> None:
    body = {"vip_subnet_id": "7f000a00-0000-4000-8000-000000000001",
            "additional_vips": [{"subnet_id": "7f000a00-0000-4000-8000-000000000001"}]}  # fmt: skip
    with provider_declaring(plane, additional_vips=False):
        why = "Provider 'noop' does not support a requested option: additional_vips"
        assert_fault(api.post(LBS_PATH, {"loadbalancer": body}), 400, why)
    assert api.get(LBS_PATH).json()["loadbalancers"] == []
