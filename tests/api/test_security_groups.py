"""Security groups through the Networking API, and ``vip_sg_ids`` on load balancers.

A member keeps its project's groups and rules (Neutron's shapes and 4xx); another project
neither sees nor changes them. A load balancer names groups in ``vip_sg_ids``: unknown
or foreign ones are 400 as Octavia answers, and the graph the provider is given carries,
on each listener, exactly the sources the groups' ingress rules allow for its protocol and
port; a rule added or removed converges the load balancers using the group.
"""

from __future__ import annotations

import time
from typing import Any

from lbaas.model.security_rules import NO_SOURCE
from tests.api.resource_base import assert_fault, assert_neutron_fault
from tests.support.api_client import Api
from tests.support.control_plane import noop_of
from tests.support.fake_providers import provider_declaring

GROUPS, RULES = "/v2.0/security-groups", "/v2.0/security-group-rules"
LB = "/v2/lbaas/loadbalancers"


def _group(api: Api, name: str = "web") -> dict[str, Any]:
    reply = api.post(GROUPS, {"security_group": {"name": name, "description": "d"}})
    assert reply.status_code == 201, reply.text
    group: dict[str, Any] = reply.json()["security_group"]
    return group


def _rule(api: Api, group_id: str, **fields: Any) -> Any:
    body = {"security_group_id": group_id, "direction": "ingress", **fields}
    return api.post(RULES, {"security_group_rule": body})


def _sources(plane: Any, lb_id: str, port: int) -> tuple[str, ...]:
    graph = noop_of(plane).graphs[lb_id]
    [listener] = [li for li in graph.listeners if li.protocol_port == port]
    return tuple(listener.allowed_cidrs)


def _converged_to(plane: Any, lb_id: str, port: int, wanted: tuple[str, ...]) -> None:
    deadline = time.monotonic() + 10
    while _sources(plane, lb_id, port) != wanted:
        assert time.monotonic() < deadline, _sources(plane, lb_id, port)
        time.sleep(0.02)


def test_a_group_is_kept_shown_listed_changed_and_deleted(api: Api) -> None:
    group = _group(api)
    assert (group["name"], group["project_id"], group["stateful"]) == ("web", "p-alpha", True)
    # Neutron's two default egress rules come with a new group.
    rules = group["security_group_rules"]
    assert sorted((r["direction"], r["ethertype"]) for r in rules) == [
        ("egress", "IPv4"),
        ("egress", "IPv6"),
    ]
    shown = api.get(f"{GROUPS}/{group['id']}").json()["security_group"]
    assert shown == group
    assert [g["id"] for g in api.get(GROUPS, params={"name": "web"}).json()["security_groups"]] == [
        group["id"]
    ]
    renamed = api.put(f"{GROUPS}/{group['id']}", {"security_group": {"name": "www"}})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["security_group"]["name"] == "www"
    assert renamed.json()["security_group"]["description"] == "d"
    assert api.delete(f"{GROUPS}/{group['id']}").status_code == 204
    assert_neutron_fault(api.get(f"{GROUPS}/{group['id']}"), 404, "does not exist")
    assert api.get(RULES).json()["security_group_rules"] == []


def test_another_project_neither_sees_nor_changes_a_group(api: Api) -> None:
    group = _group(api)
    other = api.as_("p-beta", "member")
    assert other.get(GROUPS).json()["security_groups"] == []
    assert other.get(RULES).json()["security_group_rules"] == []
    assert_neutron_fault(other.get(f"{GROUPS}/{group['id']}"), 403)
    assert_neutron_fault(other.delete(f"{GROUPS}/{group['id']}"), 403)
    assert_neutron_fault(_rule(other, group["id"], protocol="tcp"), 403)
    assert_neutron_fault(other.post(GROUPS, {"security_group": {"project_id": "p-alpha"}}), 403)


def test_rules_are_checked_as_neutron_checks_them(api: Api) -> None:
    gid = _group(api)["id"]
    # The message and Neutron's name of the condition (its error body's ``type``).
    bad: list[tuple[dict[str, Any], str, str]] = [
        ({"port_range_min": 80, "port_range_max": 80}, "Must also specify protocol",
         "SecurityGroupProtocolRequiredWithPorts"),
        ({"protocol": "tcp", "port_range_min": 90, "port_range_max": 80}, "port_range_min",
         "SecurityGroupInvalidPortRange"),
        ({"protocol": "tcp", "port_range_min": 0, "port_range_max": 80}, "port 0",
         "SecurityGroupInvalidPortValue"),
        ({"protocol": "bogus"}, "not supported", "SecurityGroupRuleInvalidProtocol"),
        ({"protocol": "300"}, "not supported", "SecurityGroupRuleInvalidProtocol"),
        ({"ethertype": "IPv4", "remote_ip_prefix": "2001:db8::/32"}, "Conflicting value",
         "SecurityGroupRuleParameterConflict"),
        ({"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": gid}, "Only remote_ip_prefix",
         "SecurityGroupRemoteGroupAndRemoteIpPrefix"),
        ({"remote_ip_prefix": "10.0.0.300/8"}, "not a valid IP prefix", "HTTPBadRequest"),
        ({"direction": "sideways"}, "direction", "HTTPBadRequest"),
        ({"ethertype": "IPX"}, "ethertype", "HTTPBadRequest"),
    ]  # fmt: skip
    for fields, reason, kind in bad:
        assert_neutron_fault(_rule(api, gid, **fields), 400, reason, kind)
    missing = _rule(api, "00000000-0000-4000-8000-000000000000")
    assert_neutron_fault(missing, 404, "does not exist", "SecurityGroupNotFound")
    made = _rule(api, gid, protocol="TCP", port_range_min=80, remote_ip_prefix="10.1.2.3/16")
    assert made.status_code == 201, made.text
    rule = made.json()["security_group_rule"]
    assert (rule["protocol"], rule["port_range_max"], rule["remote_ip_prefix"]) == (
        "tcp",
        80,
        "10.1.0.0/16",
    )
    again = _rule(api, gid, protocol="6", port_range_min=80, remote_ip_prefix="10.1.0.0/16")
    assert_neutron_fault(again, 409, f"Rule id is {rule['id']}", "SecurityGroupRuleExists")
    listed = api.get(RULES, params={"security_group_id": gid, "direction": "ingress"})
    assert [r["id"] for r in listed.json()["security_group_rules"]] == [rule["id"]]
    assert api.get(f"{RULES}/{rule['id']}").json()["security_group_rule"] == rule
    assert api.delete(f"{RULES}/{rule['id']}").status_code == 204
    assert_neutron_fault(api.get(f"{RULES}/{rule['id']}"), 404, "", "SecurityGroupRuleNotFound")


def test_vip_sg_ids_must_name_the_projects_stateful_groups(api: Api) -> None:
    foreign = _group(api.as_("p-beta", "member"))["id"]
    missing = "00000000-0000-4000-8000-000000000000"
    for gid in (foreign, missing):
        body = {"vip_subnet_id": "7f000a00-0000-4000-8000-000000000001", "vip_sg_ids": [gid]}
        assert_fault(api.post(LB, {"loadbalancer": body}), 400, f"Security Group {gid} not found.")
    stateless = api.post(GROUPS, {"security_group": {"name": "s", "stateful": False}})
    sid = stateless.json()["security_group"]["id"]
    assert_fault(
        api.put(f"{LB}/{api.create_lb()['id']}", {"loadbalancer": {"vip_sg_ids": [sid]}}),
        400,
        "stateless",
    )
    assert len(api.get(LB).json()["loadbalancers"]) == 1  # the refused creates left nothing


def test_the_groups_rules_become_each_listeners_sources(api: Api, plane: Any) -> None:
    gid = _group(api)["id"]
    assert _rule(api, gid, protocol="tcp", port_range_min=80, port_range_max=90,
                 remote_ip_prefix="10.1.0.0/16").status_code == 201  # fmt: skip
    assert _rule(api, gid, protocol="udp", remote_ip_prefix="10.9.0.0/16").status_code == 201
    assert _rule(api, gid, ethertype="IPv6", remote_ip_prefix="2001:db8::/32").status_code == 201
    lb = api.create_lb(vip_sg_ids=[gid])
    assert lb["vip_sg_ids"] == [gid]
    api.create_listener(lb["id"], protocol="TCP", protocol_port=80)
    api.create_listener(lb["id"], protocol="HTTP", protocol_port=8080)
    api.create_listener(lb["id"], protocol="UDP", protocol_port=53)
    # Port 80 is in the TCP range; 8080 is in no rule's; the IPv6 rule cannot reach an
    # IPv4 VIP.
    assert _sources(plane, lb["id"], 80) == ("10.1.0.0/16",)
    assert _sources(plane, lb["id"], 8080) == NO_SOURCE
    assert _sources(plane, lb["id"], 53) == ("10.9.0.0/16",)

    # A rule added reaches the load balancer (converged again, no status change asked).
    opened = _rule(api, gid, protocol="tcp", port_range_min=8080, port_range_max=8080)
    assert opened.status_code == 201
    _converged_to(plane, lb["id"], 8080, ("0.0.0.0/0",))
    # Every rule removed: nobody may open a flow.
    for rule in api.get(RULES, params={"security_group_id": gid}).json()["security_group_rules"]:
        if rule["direction"] == "ingress":
            assert api.delete(f"{RULES}/{rule['id']}").status_code == 204
    _converged_to(plane, lb["id"], 8080, NO_SOURCE)
    assert _sources(plane, lb["id"], 80) == NO_SOURCE

    # The group is in use; allowed_cidrs do not mix with groups.
    assert_neutron_fault(api.delete(f"{GROUPS}/{gid}"), 409, "in use", "SecurityGroupInUse")
    cidrs = {"allowed_cidrs": ["10.0.0.0/8"]}
    body = {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 81, **cidrs}
    assert_fault(api.post("/v2/lbaas/listeners", {"listener": body}), 400, "vip_sg_ids")
    api.wait_lb(lb["id"])
    # Null removes the groups: the listeners are open again, and the group can go.
    assert api.put(f"{LB}/{lb['id']}", {"loadbalancer": {"vip_sg_ids": None}}).status_code == 200
    api.wait_lb(lb["id"])
    assert _sources(plane, lb["id"], 80) == ()
    assert api.delete(f"{GROUPS}/{gid}").status_code == 204


def test_groups_are_refused_where_listeners_have_networks_or_the_provider_cannot_filter(
    api: Api, plane: Any
) -> None:
    gid = _group(api)["id"]
    lb = api.create_lb()
    api.create_listener(lb["id"], protocol="TCP", protocol_port=80, allowed_cidrs=["10.0.0.0/8"])
    put = {"loadbalancer": {"vip_sg_ids": [gid]}}
    assert_fault(api.put(f"{LB}/{lb['id']}", put), 400, "allowed_cidrs")
    plain = api.create_lb()
    api.create_listener(plain["id"], protocol="UDP", protocol_port=53)
    with provider_declaring(plane, allowed_cidrs_protocols=frozenset({"TCP"})):
        assert_fault(api.put(f"{LB}/{plain['id']}", put), 400, "vip_sg_ids with UDP listeners")
    with provider_declaring(plane, allowed_cidrs_protocols=frozenset()):
        body = {"vip_subnet_id": "7f000a00-0000-4000-8000-000000000001", "vip_sg_ids": [gid]}
        assert_fault(api.post(LB, {"loadbalancer": body}), 400, "cannot filter a VIP's sources")
    assert api.get(f"{LB}/{plain['id']}").json()["loadbalancer"]["vip_sg_ids"] == []
