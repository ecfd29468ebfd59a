"""Instances' ports through the Networking API: ``POST/PUT/DELETE /v2.0/ports``.

A member records its own project's ports (with the instance, its owner kind, the host it
is bound to and its DNS name); another project cannot see, change or delete them; lbaas's
own ports (VIPs) cannot be changed or deleted here; bad input is a 4xx that changes
nothing.
"""

from __future__ import annotations

from typing import Any

from tests.api.resource_base import assert_neutron_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api


def _network(api: Api) -> str:
    network: str = api.get(f"/v2/subnets/{LOOPBACK_SUBNET}").json()["subnet"]["network_id"]
    return network


def _create(api: Api, **fields: Any) -> Any:
    body = {"network_id": _network(api), **fields}
    return api.post("/v2.0/ports", json={"port": body})


def test_a_port_records_its_instance_host_and_address(api: Api) -> None:
    reply = _create(
        api,
        device_id="vm-1",
        device_owner="compute:nova",
        **{"binding:host_id": "h1"},
        dns_name="web-1",
        fixed_ips=[{"subnet_id": LOOPBACK_SUBNET, "ip_address": "127.0.10.50"}],
    )
    assert reply.status_code == 201, reply.text
    port = reply.json()["port"]
    assert (port["device_id"], port["binding:host_id"], port["project_id"]) == (
        "vm-1",
        "h1",
        "p-alpha",
    )
    assert port["fixed_ips"] == [{"subnet_id": LOOPBACK_SUBNET, "ip_address": "127.0.10.50"}]
    assert api.get(f"/v2.0/ports/{port['id']}").json()["port"]["dns_name"] == "web-1"
    listed = api.get("/v2.0/ports", params={"binding:host_id": "h1"}).json()["ports"]
    assert [p["id"] for p in listed] == [port["id"]]
    by_ip = api.get("/v2.0/ports", params={"fixed_ips": "ip_address=127.0.10.50"}).json()
    assert [p["id"] for p in by_ip["ports"]] == [port["id"]]
    assert api.get("/v2.0/ports", params={"binding:host_id": "h2"}).json()["ports"] == []


def test_a_port_moves_and_is_removed(api: Api) -> None:
    port = _create(api, device_id="vm-2", **{"binding:host_id": "h1"}).json()["port"]
    assert port["fixed_ips"][0]["ip_address"].startswith("127.0.10.")  # allocated
    moved = api.put(f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "h2"}})
    assert moved.status_code == 200, moved.text
    assert moved.json()["port"]["binding:host_id"] == "h2"
    assert moved.json()["port"]["device_id"] == "vm-2"  # unsent attributes stay
    assert api.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert_neutron_fault(api.get(f"/v2.0/ports/{port['id']}"), 404)
    assert_neutron_fault(api.delete(f"/v2.0/ports/{port['id']}"), 404)


def test_another_project_cannot_see_change_or_remove_a_port(api: Api, admin: Api) -> None:
    port = _create(api, device_id="vm-3").json()["port"]
    other = api.as_("p-beta", "member")
    path = f"/v2.0/ports/{port['id']}"
    assert_neutron_fault(other.get(path), 403)
    assert_neutron_fault(other.put(path, json={"port": {"device_id": "mine"}}), 403)
    assert_neutron_fault(other.delete(path), 403)
    assert port["id"] not in [p["id"] for p in other.get("/v2.0/ports").json()["ports"]]
    assert_neutron_fault(api.as_("p-alpha", "reader").delete(path), 403)
    assert_neutron_fault(_create(other, project_id="p-alpha"), 403)
    assert admin.get(path).json()["port"]["device_id"] == "vm-3"
    made = _create(admin, project_id="p-beta", device_id="vm-b").json()["port"]
    assert made["project_id"] == "p-beta"
    assert other.get(f"/v2.0/ports/{made['id']}").status_code == 200


def test_lbaas_own_ports_cannot_be_changed_or_removed(api: Api) -> None:
    lb = api.create_lb()
    path = f"/v2.0/ports/{lb['vip_port_id']}"
    assert_neutron_fault(api.put(path, json={"port": {"device_id": "x"}}), 409)
    assert_neutron_fault(api.delete(path), 409)
    assert api.get(path).json()["port"]["device_id"] == lb["id"]
    assert_neutron_fault(_create(api, device_owner="lbaas:vip"), 400)


def test_bad_port_input_is_refused_and_changes_nothing(api: Api) -> None:
    before = api.get("/v2.0/ports").json()["ports"]
    taken = _create(api, fixed_ips=[{"ip_address": "127.0.10.60"}])
    assert taken.status_code == 201
    assert_neutron_fault(_create(api, fixed_ips=[{"ip_address": "127.0.10.60"}]), 409)
    assert_neutron_fault(_create(api, fixed_ips=[{"ip_address": "10.9.9.9"}]), 400)
    assert_neutron_fault(_create(api, fixed_ips=[{"ip_address": "not-an-ip"}]), 400)
    assert_neutron_fault(_create(api, dns_name="bad name!"), 400)
    assert_neutron_fault(_create(api, mac_address="fa:16:3e:00:00:01"), 400)
    assert_neutron_fault(_create(api, fixed_ips=[{"ip_address": "127.0.10.61"}] * 2), 400)
    assert_neutron_fault(api.post("/v2.0/ports", json={"port": {"network_id": "nope"}}), 404)
    assert_neutron_fault(_create(api, fixed_ips=[{"subnet_id": "nope"}]), 400)
    after = api.get("/v2.0/ports").json()["ports"]
    assert len(after) == len(before) + 1
