"""The instances lbaas knows, in Nova's shape: ``/compute/v2.1`` and its servers list.

An instance is the device id of a project's ``compute:`` ports: one server per device,
its addresses grouped by network name, named after the port's DNS name; lbaas's own
ports and ports of other owners are no servers; another project sees none of them.
"""

from __future__ import annotations

from typing import Any

from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api


def _port(api: Api, address: str, **fields: Any) -> None:
    network = api.get(f"/v2/subnets/{LOOPBACK_SUBNET}").json()["subnet"]["network_id"]
    fixed = [{"subnet_id": LOOPBACK_SUBNET, "ip_address": address}]
    body = {"network_id": network, "fixed_ips": fixed, **fields}
    made = api.post("/v2.0/ports", json={"port": body})
    assert made.status_code == 201, made.text


def test_the_version_document_names_2_1(api: Api) -> None:
    version = api.get("/compute/v2.1").json()["version"]
    assert (version["id"], version["min_version"], version["version"]) == ("v2.1", "2.1", "2.1")
    assert version["links"][0]["href"].endswith("/compute/v2.1/")


def test_servers_are_the_devices_of_compute_ports(api: Api) -> None:
    _port(api, "127.0.10.61", device_id="vm-a", device_owner="compute:nova", dns_name="web-a")
    _port(api, "127.0.10.62", device_id="vm-a", device_owner="compute:nova")
    _port(api, "127.0.10.63", device_id="vm-b", device_owner="compute:az1", name="b-port")
    _port(api, "127.0.10.64", device_id="router-1", device_owner="network:router_interface")
    api.post("/v2/lbaas/loadbalancers", json={"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}})

    servers = api.get("/compute/v2.1/servers/detail").json()["servers"]
    assert [(s["id"], s["name"], s["status"]) for s in servers] == [
        ("vm-a", "web-a", "ACTIVE"),
        ("vm-b", "b-port", "ACTIVE"),
    ]
    (addresses,) = servers[0]["addresses"].values()
    assert sorted(a["addr"] for a in addresses) == ["127.0.10.61", "127.0.10.62"]
    assert {a["version"] for a in addresses} == {4}
    assert servers[0]["tenant_id"] == "p-alpha"
    mine = api.get("/compute/v2.1/servers/detail", params={"project_id": "p-alpha"}).json()
    assert len(mine["servers"]) == 2
    assert api.get("/compute/v2.1/servers").json()["servers"] == servers


def test_another_project_sees_no_server(api: Api) -> None:
    _port(api, "127.0.10.65", device_id="vm-c", device_owner="compute:nova")
    other = api.as_("p-beta", "member")
    assert other.get("/compute/v2.1/servers/detail").json()["servers"] == []
    asked = other.get("/compute/v2.1/servers/detail", params={"project_id": "p-alpha"})
    assert asked.json()["servers"] == []


def test_a_caller_without_a_role_is_refused(api: Api) -> None:
    assert_fault(api.as_("p-alpha", "").get("/compute/v2.1/servers/detail"), 403)
