"""Differences from Octavia found by driving both with real clients (issue 9), closed.

Each test asserts Octavia's exact status and wording: child-collection filters, WSME's
error texts (enumerations, argument paths of unknown attributes, bodies that are not
JSON, values it cannot convert), 415 for a body that is not JSON, 405 with ``Allow`` in
pecan's shape, the pool's absent ``healthmonitor_id``, the quota keys, the empty
floating-IP list the Ansible collection reads, and profile keys a provider lists but
cannot honour yet.
"""

from __future__ import annotations

import json
from typing import Any

from lbaas.providers.amphora.capabilities import AMPHORA_CAPABILITIES
from tests.api.resource_base import assert_fault, assert_pecan
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.fake_providers import provider_declaring

LBS = "/v2/lbaas/loadbalancers"


def _tree(api: Api) -> dict[str, Any]:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"], listener_id=listener["id"])
    policy = api.create_l7policy(lb["id"], listener["id"])
    return {"lb": lb["id"], "listener": listener["id"], "pool": pool["id"], "policy": policy["id"]}


# -- 1. child-collection filters ---------------------------------------------------------


def test_child_collections_accept_their_parent_id_and_any_attribute(api: Api) -> None:
    t = _tree(api)
    rule = api.create_l7rule(t["lb"], t["policy"], type="PATH", compare_type="EQUAL_TO", value="/a")
    member = api.create_member(t["lb"], t["pool"], address="192.0.2.7", protocol_port=80)
    rules = f"/v2/lbaas/l7policies/{t['policy']}/rules"
    members = f"/v2/lbaas/pools/{t['pool']}/members"
    # What openstacksdk's l7_rules(policy) and members(pool) send.
    for path, key, query in (
        (rules, "rules", f"l7policy_id={t['policy']}"),
        (members, "members", f"pool_id={t['pool']}"),
        (rules, "rules", "type=PATH&compare_type=EQUAL_TO&invert=false"),
        (members, "members", "address=192.0.2.7&protocol_port=80&weight=1&backup=false"),
    ):
        r = api.get(f"{path}?{query}")
        assert r.status_code == 200, r.text
        assert [o["id"] for o in r.json()[key]] == [rule["id"] if key == "rules" else member["id"]]
    assert api.get(f"{rules}?type=HEADER").json()["rules"] == []
    assert_fault(
        api.get(f"{rules}?bogus=1"), 400, "One or more arguments are either duplicate or invalid"
    )


def test_vip_vnic_type_filters_match_every_normal_vip(api: Api) -> None:
    lb = api.create_lb()
    for fields in ("", "&fields=id"):
        normal = api.get(f"{LBS}?vip_vnic_type=normal{fields}")
        assert normal.status_code == 200, normal.text
        assert [o["id"] for o in normal.json()["loadbalancers"]] == [lb["id"]]
        direct = api.get(f"{LBS}?vip_vnic_type=direct{fields}")
        assert direct.status_code == 200, direct.text
        assert direct.json()["loadbalancers"] == []


# -- 3. error texts ----------------------------------------------------------------------


def test_enumerations_are_listed_as_octavia_lists_them(api: Api) -> None:
    lb = api.create_lb()
    body = {"protocol": "FTP", "protocol_port": 80, "loadbalancer_id": lb["id"]}
    r = api.post("/v2/lbaas/listeners", {"listener": body})
    assert r.status_code == 400
    assert r.json()["faultstring"] == (
        "Invalid input for field/attribute protocol. Value: 'FTP'. Value should be one of: "
        "HTTP, HTTPS, TCP, TERMINATED_HTTPS, UDP, SCTP, PROMETHEUS"
    )


def test_an_unknown_lb_algorithm_lists_octavias_values_only(api: Api) -> None:
    lb = api.create_lb()
    expected = (
        "Invalid input for field/attribute lb_algorithm. Value: 'RANDOM'. Value should be "
        "one of: ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT"
    )
    body = {"protocol": "TCP", "lb_algorithm": "RANDOM", "loadbalancer_id": lb["id"]}
    r = api.post("/v2/lbaas/pools", {"pool": body})
    assert_fault(r, 400)
    assert r.json()["faultstring"] == expected
    pool = api.create_pool(lb["id"], protocol="TCP", lb_algorithm="ROUND_ROBIN")
    r = api.put(f"/v2/lbaas/pools/{pool['id']}", {"pool": {"lb_algorithm": "RANDOM"}})
    assert r.json()["faultstring"] == expected
    # The extension value itself is still accepted where the provider offers it.
    r = api.put(f"/v2/lbaas/pools/{pool['id']}", {"pool": {"lb_algorithm": "MAGLEV"}})
    assert r.status_code == 200, r.text


def test_unknown_attributes_name_octavias_argument_path(api: Api) -> None:
    t = _tree(api)
    vip = {"vip_subnet_id": LOOPBACK_SUBNET}
    cases = [
        ("POST", LBS, {"loadbalancer": {**vip, "bogus": 1}}, "load_balancer.loadbalancer: bogus"),
        ("POST", LBS, {"loadbalancer": vip, "bogus": 1}, "load_balancer: bogus"),
        (
            "POST",
            LBS,
            {
                "loadbalancer": {
                    **vip,
                    "listeners": [{"protocol": "HTTP", "protocol_port": 80, "x": 1}],
                }
            },
            "load_balancer.loadbalancer.listeners: x",
        ),
        (
            "PUT",
            f"/v2/lbaas/listeners/{t['listener']}",
            {"listener": {"protocol": "TCP"}},
            "listener_.listener: protocol",
        ),
        (
            "PUT",
            f"/v2/lbaas/pools/{t['pool']}",
            {"pool": {"protocol": "TCP"}},
            "pool_.pool: protocol",
        ),
        (
            "POST",
            f"/v2/lbaas/pools/{t['pool']}/members",
            {"member": {"address": "192.0.2.1", "protocol_port": 80, "x": 1, "y": 2}},
            "member_.member: x, y",
        ),
        (
            "PUT",
            f"/v2/lbaas/pools/{t['pool']}/members",
            {"members": [{"address": "192.0.2.1", "protocol_port": 80, "x": 1}]},
            "members_.members: x",
        ),
        (
            "POST",
            "/v2/lbaas/healthmonitors",
            {
                "healthmonitor": {
                    "pool_id": t["pool"],
                    "type": "TCP",
                    "delay": 1,
                    "timeout": 1,
                    "max_retries": 1,
                    "x": 1,
                }
            },
            "health_monitor_.healthmonitor: x",
        ),
        ("PUT", "/v2/lbaas/quotas/p-alpha", {"quota": {"pools": 1}}, "quotas.quota: pools"),
    ]
    admin = api.as_("p-admin", "admin")
    for method, path, body, where in cases:
        r = admin.request(method, path, json=body)
        noun = "attributes" if ", " in where else "attribute"
        assert r.status_code == 400, r.text
        assert r.json()["faultstring"] == f"Unknown {noun} for argument {where}", (path, body)


def test_values_wsme_cannot_convert_quote_the_whole_body(api: Api) -> None:
    lb = api.create_lb()
    body = {"listener": {"protocol": "HTTP", "protocol_port": 80, "loadbalancer_id": lb["id"]}}
    for field, value, reason in (
        ("admin_state_up", "maybe", "Value not an unambiguous boolean: maybe"),
        ("protocol_port", "eighty", "invalid literal for int() with base 10: 'eighty'"),
        ("sni_container_refs", "ref", "Value not a valid list: ref"),
    ):
        sent = {"listener": {**body["listener"], field: value}}
        r = api.post("/v2/lbaas/listeners", sent)
        assert r.status_code == 400, r.text
        assert r.json()["faultstring"] == (
            f"Invalid input for field/attribute listener_. Value: '{sent}'. {reason}"
        )
    assert api.get("/v2/lbaas/listeners").json()["listeners"] == []


def test_a_body_that_is_not_json(api: Api) -> None:
    r = api.post(LBS, content=b'{"loadbalancer": ', headers={"Content-Type": "application/json"})
    assert_fault(r, 400, "Request is not in valid JSON format")
    assert r.json()["faultstring"] == "Request is not in valid JSON format"


# -- 4. status codes ---------------------------------------------------------------------


def test_a_text_plain_body_is_415(api: Api) -> None:
    body = b'{"loadbalancer": {"vip_subnet_id": "%s"}}' % LOOPBACK_SUBNET.encode()
    r = api.post(LBS, content=body, headers={"Content-Type": "text/plain"})
    assert_fault(r, 415, "Unknown mimetype: text/plain")
    r = api.post(LBS, content=body, headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 201, r.text
    assert len(api.get(LBS).json()["loadbalancers"]) == 1


def test_methods_a_path_does_not_serve_are_405_with_allow(api: Api) -> None:
    lb = api.create_lb()
    for method, path, allow in (
        ("DELETE", LBS, "GET, POST"),
        ("PATCH", f"{LBS}/{lb['id']}", "GET, PUT, DELETE"),
        ("POST", f"{LBS}/{lb['id']}", "GET, PUT, DELETE"),
        ("DELETE", "/v2.0/lbaas/pools", "GET, POST"),
        ("POST", "/v2/lbaas/quotas/defaults", "GET"),
    ):
        r = api.request(method, path)
        # pecan's body, as Octavia 19 answers (tests/api/test_octavia_wire_shapes.py).
        assert_pecan(r, 405, "")
        assert r.headers["allow"] == allow, (method, path)
    assert api.get(f"{LBS}/{lb['id']}").json()["loadbalancer"]["provisioning_status"] == "ACTIVE"


# -- 5. shapes ---------------------------------------------------------------------------


def test_pool_without_monitor_has_no_healthmonitor_id(api: Api) -> None:
    t = _tree(api)
    pool = api.get(f"/v2/lbaas/pools/{t['pool']}").json()["pool"]
    assert "healthmonitor_id" not in pool
    [listed] = api.get("/v2/lbaas/pools").json()["pools"]
    assert "healthmonitor_id" not in listed
    tree = api.get(f"{LBS}/{t['lb']}/status").json()["statuses"]["loadbalancer"]
    # Octavia's status type always has the attribute: null without a monitor.
    [without] = tree["listeners"][0]["pools"]
    assert set(without) == {*STATUS_KEYS, "health_monitor", "members"}
    assert without["health_monitor"] is None
    hm = api.create_healthmonitor(t["lb"], t["pool"], type="TCP", delay=1, timeout=1, max_retries=1)
    assert api.get(f"/v2/lbaas/pools/{t['pool']}").json()["pool"]["healthmonitor_id"] == hm["id"]
    tree = api.get(f"{LBS}/{t['lb']}/status").json()["statuses"]["loadbalancer"]
    assert tree["listeners"][0]["pools"][0]["health_monitor"]["id"] == hm["id"]


STATUS_KEYS = {"id", "name", "provisioning_status", "operating_status"}

QUOTA_KEYS = {
    "project_id",
    "tenant_id",
    "loadbalancer",
    "load_balancer",
    "listener",
    "member",
    "pool",
    "healthmonitor",
    "health_monitor",
    "l7policy",
    "l7rule",
}


def test_quota_objects_have_octavias_keys(admin: Api) -> None:
    admin.put("/v2/lbaas/quotas/p-alpha", {"quota": {"pool": 3}})
    [listed] = admin.get("/v2/lbaas/quotas").json()["quotas"]
    assert set(listed) == QUOTA_KEYS
    assert (listed["project_id"], listed["pool"], listed["member"]) == ("p-alpha", 3, None)
    defaults = admin.get("/v2/lbaas/quotas/defaults").json()["quota"]
    assert set(defaults) == QUOTA_KEYS and defaults["project_id"] == "defaults"
    assert set(admin.get("/v2/lbaas/quotas/p-alpha").json()["quota"]) == QUOTA_KEYS
    # Octavia adds tenant_id to every type with project_id: every quota body carries it.
    bodies = [
        listed,
        defaults,
        admin.get("/v2/lbaas/quotas/p-alpha").json()["quota"],
        admin.get("/v2/lbaas/quotas/p-beta/default").json()["quota"],
        admin.put("/v2/lbaas/quotas/p-alpha", {"quota": {"pool": 4}}).json()["quota"],
    ]
    for body in bodies:
        assert set(body) == QUOTA_KEYS and body["tenant_id"] == body["project_id"], body


def test_quota_list_leaves_out_projects_without_limits_of_their_own(admin: Api) -> None:
    # Creating a load balancer makes the record the quota check locks (all null).
    admin.as_("p-beta", "member").create_lb()
    assert admin.get("/v2/lbaas/quotas").json()["quotas"] == []
    admin.put("/v2/lbaas/quotas/p-beta", {"quota": {"member": 2}})
    listed = admin.get("/v2/lbaas/quotas").json()["quotas"]
    assert [(q["project_id"], q["member"], q["pool"]) for q in listed] == [("p-beta", 2, None)]
    assert admin.delete("/v2/lbaas/quotas/p-beta").status_code == 202
    assert admin.get("/v2/lbaas/quotas").json()["quotas"] == []


def test_amphora_lists_octavias_capability_names() -> None:
    assert set(AMPHORA_CAPABILITIES.flavor_keys) == {
        "loadbalancer_topology",
        "compute_flavor",
        "amp_image_tag",
        "sriov_vip",
        "allow_member_sriov",
    }
    assert set(AMPHORA_CAPABILITIES.availability_zone_keys) == {
        "compute_zone",
        "volume_zone",
        "management_network",
        "valid_vip_networks",
    }
    for key in AMPHORA_CAPABILITIES.unhonoured_keys:
        text = {**AMPHORA_CAPABILITIES.flavor_keys, **AMPHORA_CAPABILITIES.availability_zone_keys}
        assert "Not honoured by this provider yet" in text[key], key


def test_profiles_setting_an_unhonoured_key_are_400(admin: Api, plane: Any) -> None:
    keys = {"compute_flavor": "not yet", "loadbalancer_topology": "SINGLE"}
    with provider_declaring(plane, flavor_keys=keys, unhonoured_keys=frozenset({"compute_flavor"})):
        r = admin.post(
            "/v2/lbaas/flavorprofiles",
            {
                "flavorprofile": {
                    "name": "fp",
                    "provider_name": "noop",
                    "flavor_data": '{"compute_flavor": "m1.small"}',
                }
            },
        )
        assert_fault(r, 400)
        assert r.json()["faultstring"] == (
            "Provider 'noop' does not support a requested option: compute_flavor (not honoured yet)"
        )
        assert admin.get("/v2/lbaas/flavorprofiles").json()["flavorprofiles"] == []
        ok = admin.post(
            "/v2/lbaas/flavorprofiles",
            {
                "flavorprofile": {
                    "name": "fp",
                    "provider_name": "noop",
                    "flavor_data": '{"loadbalancer_topology": "SINGLE"}',
                }
            },
        )
        assert ok.status_code == 201, ok.text


def test_a_topology_the_provider_cannot_build_yet_is_400(admin: Api, plane: Any) -> None:
    keys = {"loadbalancer_topology": "SINGLE only"}
    values = {"loadbalancer_topology": frozenset({"SINGLE"})}
    with provider_declaring(plane, flavor_keys=keys, profile_values=values):
        for data, status in (
            ('{"loadbalancer_topology": "ACTIVE_STANDBY"}', 400),
            ('{"loadbalancer_topology": ["SINGLE"]}', 400),
            ('{"loadbalancer_topology": "SINGLE"}', 201),
        ):
            body = {"flavorprofile": {"name": "fp", "provider_name": "noop", "flavor_data": data}}
            r = admin.post("/v2/lbaas/flavorprofiles", body)
            assert r.status_code == status, r.text
        assert r.json()["flavorprofile"]["flavor_data"] == '{"loadbalancer_topology": "SINGLE"}'
        refused = admin.post(
            "/v2/lbaas/flavorprofiles",
            {
                "flavorprofile": {
                    "name": "fp",
                    "provider_name": "noop",
                    "flavor_data": '{"loadbalancer_topology": "ACTIVE_STANDBY"}',
                }
            },
        )
        assert refused.json()["faultstring"] == (
            "Provider 'noop' does not support a requested option: "
            "loadbalancer_topology='ACTIVE_STANDBY' (not honoured yet)"
        )
        assert len(admin.get("/v2/lbaas/flavorprofiles").json()["flavorprofiles"]) == 1


# -- 2. what the Ansible collection reads ------------------------------------------------


def test_floating_ips_are_an_empty_list_whatever_the_filters(api: Api) -> None:
    lb = api.create_lb()
    for query in ("", f"?port_id={lb['vip_port_id']}", "?floating_ip_address=192.0.2.1"):
        for prefix in ("/v2.0", "/v2"):
            r = api.get(f"{prefix}/floatingips{query}")
            assert r.status_code == 200, r.text
            assert r.json() == {"floatingips": []}


# -- 6. the OpenAPI document -------------------------------------------------------------


def test_openapi_declares_the_error_answers_and_no_422(api: Api) -> None:
    document = api.get("/openapi.json").json()
    operations = [
        (path, method, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
    ]
    assert len(operations) > 50
    for path, method, op in operations:
        responses = op["responses"]
        assert "422" not in responses, (method, path)
        for status in ("400", "403", "404", "405", "409", "413", "415", "406"):
            assert status in responses, (method, path, status)
        if "networking" in op.get("tags", []):  # Neutron's body on the Networking routes
            for status in ("400", "404", "405", "406"):
                neutron = responses[status]["content"]["application/json"]["schema"]
                assert neutron["required"] == ["NeutronError"], (method, path, status)
            continue
        fault = responses["400"]["content"]["application/json"]["schema"]
        # A GET's 400 may also be pecan's (a bad limit or sort direction, from the hook).
        shapes = fault["anyOf"] if method == "get" else [fault]
        assert [s["required"] for s in shapes][0] == ["faultcode", "faultstring", "debuginfo"]
        if method == "get":
            assert shapes[1]["required"] == ["code", "title", "description"]
        pecan = responses["405"]["content"]["application/json"]["schema"]
        assert pecan["required"] == ["code", "title", "description"]
    # Bodiless successes are documented without a body.
    reset = document["paths"]["/v2/lbaas/quotas/{project_id}"]["delete"]["responses"]["202"]
    assert "content" not in reset


# -- issue 31: availability zones' valid_vip_networks -----------------------------------


def test_a_zone_restricts_its_vips_to_its_valid_vip_networks(
    api: Api, admin: Api, plane: Any
) -> None:
    network = api.create_lb()["vip_network_id"]
    keys = {"valid_vip_networks": "VIP networks", "compute_zone": "zone"}
    with provider_declaring(plane, availability_zone_keys=keys):
        zones = []
        for name, networks in (("open", [network.upper()]), ("closed", ["net-elsewhere"])):
            data = f'{{"valid_vip_networks": {json.dumps(networks)}}}'
            profile = admin.post(
                "/v2/lbaas/availabilityzoneprofiles",
                {
                    "availability_zone_profile": {
                        "name": name,
                        "provider_name": "noop",
                        "availability_zone_data": data,
                    }
                },
            )
            assert profile.status_code == 201, profile.text
            body = {
                "name": name,
                "availability_zone_profile_id": profile.json()["availability_zone_profile"]["id"],
            }
            made = admin.post("/v2/lbaas/availabilityzones", {"availability_zone": body})
            assert made.status_code == 201, made.text
            zones.append(name)
        bad = admin.post(
            "/v2/lbaas/availabilityzoneprofiles",
            {
                "availability_zone_profile": {
                    "name": "bad",
                    "provider_name": "noop",
                    "availability_zone_data": '{"valid_vip_networks": "net-1"}',
                }
            },
        )
        assert_fault(bad, 400, "valid_vip_networks must be a list of network IDs.")
    before = len(api.get(LBS).json()["loadbalancers"])
    vip = {"vip_subnet_id": LOOPBACK_SUBNET}
    r = api.post(LBS, {"loadbalancer": {**vip, "availability_zone": "closed"}})
    assert_fault(r, 400)
    assert r.json()["faultstring"] == (
        "Validation failure: Supplied VIP network_id is not allowed by the configuration "
        "of this deployment."
    )
    assert len(api.get(LBS).json()["loadbalancers"]) == before
    ok = api.post(LBS, {"loadbalancer": {**vip, "availability_zone": "open"}})
    assert ok.status_code == 201, ok.text
    assert ok.json()["loadbalancer"]["vip_network_id"] == network
