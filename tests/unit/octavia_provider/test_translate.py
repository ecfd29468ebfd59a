"""octavia-lib objects into lbaas's request bodies (translate.py)."""

from __future__ import annotations

from typing import Any

from lbaas_octavia_provider import translate


class UnsetType:
    """Stands in for octavia-lib's Unset marker, which translate recognises by its type's
    name (octavia-lib is not installed in lbaas's environment)."""


UNSET = UnsetType()


class Model:
    """An octavia-lib-shaped data model: plain attributes, nested models have to_dict."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def test_a_listener_keeps_octavias_id_and_leaves_secrets_unset_and_children_out() -> None:
    listener = Model(
        listener_id="11111111-1111-4111-8111-111111111111",
        loadbalancer_id="22222222-2222-4222-8222-222222222222",
        project_id="p1",
        protocol="HTTP",
        protocol_port=80,
        name=None,
        allowed_cidrs=["192.0.2.0/24"],
        default_tls_container_data="-----BEGIN PRIVATE KEY-----",
        default_pool=Model(pool_id="x"),
        l7policies=[Model(l7policy_id="y")],
        timeout_client_data=UNSET,
    )
    body = translate.create_body("listener", listener)
    assert body == {
        "listener": {
            "id": "11111111-1111-4111-8111-111111111111",
            "loadbalancer_id": "22222222-2222-4222-8222-222222222222",
            "protocol": "HTTP",
            "protocol_port": 80,
            "allowed_cidrs": ["192.0.2.0/24"],
        }
    }


def test_an_update_sends_only_what_may_change() -> None:
    new = Model(
        pool_id="p",
        loadbalancer_id="lb",
        protocol="HTTP",
        name="renamed",
        project_id="p1",
        lb_algorithm="LEAST_CONNECTIONS",
        members=[Model(member_id="m")],
    )
    assert translate.update_body("pool", new) == {
        "pool": {"name": "renamed", "lb_algorithm": "LEAST_CONNECTIONS"}
    }


def test_a_member_batch_names_every_member_by_octavias_id() -> None:
    members = [
        Model(
            member_id=f"m{i}",
            pool_id="p",
            address="192.0.2.1",
            protocol_port=80 + i,
            vnic_type="direct" if i else "normal",
            project_id="p1",
        )
        for i in range(2)
    ]
    body = translate.batch_body(members)
    assert [m["id"] for m in body["members"]] == ["m0", "m1"]
    assert "pool_id" not in body["members"][0] and "project_id" not in body["members"][0]
    assert body["members"][1]["request_sriov"] is True


def test_the_vip_lbaas_is_given_follows_the_setting() -> None:
    lb = Model(
        loadbalancer_id="lb",
        vip_subnet_id="s",
        vip_address="192.0.2.9",
        vip_port_id="port",
        vip_network_id="n",
        additional_vips=[{"subnet_id": "s2", "ip_address": "192.0.2.10", "port_id": "x"}],
    )
    assert translate.vip_fields(lb, ("subnet", "address")) == {
        "vip_subnet_id": "s",
        "vip_address": "192.0.2.9",
        "additional_vips": [{"subnet_id": "s2", "ip_address": "192.0.2.10"}],
    }
    assert translate.vip_fields(lb, ("port",))["vip_port_id"] == "port"
    body = translate.create_body("loadbalancer", lb)["loadbalancer"]
    assert body == {"id": "lb"}  # the VIP goes in only as the setting says


LB = "22222222-2222-4222-8222-222222222222"
LISTENER = "11111111-1111-4111-8111-111111111111"
WEB, API = "33333333-3333-4333-8333-333333333333", "44444444-4444-4444-8444-444444444444"


def _pool(pool_id: str, name: str | None, **children: Any) -> Model:
    return Model(
        pool_id=pool_id,
        loadbalancer_id=LB,
        listener_id=LISTENER if pool_id == WEB else UNSET,
        project_id="p1",
        name=name,
        protocol="HTTP",
        lb_algorithm="ROUND_ROBIN",
        session_persistence=None,
        tls_container_data=UNSET,
        healthmonitor=children.get("healthmonitor", UNSET),
        members=children.get("members", UNSET),
    )


def _fully_populated() -> Model:
    """A load balancer as Octavia hands a single-call create to its driver: the listener's
    default pool is also in ``pools`` and an L7 policy redirects to the other pool."""
    monitor = Model(healthmonitor_id="hm", pool_id=WEB, project_id="p1", type="HTTP",
                    delay=1, timeout=1, max_retries=1, url_path="/")  # fmt: skip
    members = [
        Model(
            member_id=f"m{i}",
            pool_id=WEB,
            project_id="p1",
            address="192.0.2.1",
            protocol_port=8080 + i,
            vnic_type="normal",
            backup=False,
        )  # fmt: skip
        for i in range(2)
    ]
    web = _pool(WEB, None, healthmonitor=monitor, members=members)
    rule = Model(l7rule_id="r1", l7policy_id="pol", project_id="p1", type="PATH",
                 compare_type="STARTS_WITH", value="/api", key=None, invert=False)  # fmt: skip
    policy = Model(l7policy_id="pol", listener_id=LISTENER, project_id="p1",
                   action="REDIRECT_TO_POOL", redirect_pool_id=API, position=1, rules=[rule])  # fmt: skip
    listener = Model(
        listener_id=LISTENER,
        loadbalancer_id=LB,
        project_id="p1",
        protocol="HTTP",
        protocol_port=80,
        default_pool_id=WEB,
        default_pool=web,
        l7policies=[policy],
        timeout_client_data=61000,
        timeout_member_connect=4000,
        timeout_member_data=62000,
        timeout_tcp_inspect=0,
        default_tls_container_data="-----BEGIN PRIVATE KEY-----",
        sni_container_data=["-----BEGIN PRIVATE KEY-----"],
    )
    return Model(loadbalancer_id=LB, project_id="p1", name="full", listeners=[listener],
                 pools=[web, _pool(API, "api")])  # fmt: skip


def test_a_fully_populated_create_is_one_tree_with_octavias_ids() -> None:
    body = translate.graph(_fully_populated())
    assert [p["id"] for p in body["pools"]] == [WEB, API]  # the shared pool once
    web, api = body["pools"]
    assert "name" not in web and api["name"] == "api"  # an unnamed pool is known by its id
    assert web["healthmonitor"] == {
        "id": "hm", "type": "HTTP", "delay": 1, "timeout": 1, "max_retries": 1, "url_path": "/"
    }  # fmt: skip
    assert [(m["id"], m["protocol_port"]) for m in web["members"]] == [("m0", 8080), ("m1", 8081)]
    assert all(set(m) == {"id", "address", "protocol_port", "backup"} for m in web["members"])
    for pool in body["pools"]:
        assert not {"loadbalancer_id", "listener_id", "project_id"} & set(pool), pool
    (listener,) = body["listeners"]
    assert (listener["id"], listener["default_pool_id"]) == (LISTENER, WEB)
    assert not {"loadbalancer_id", "project_id", "default_pool"} & set(listener)
    (policy,) = listener["l7policies"]
    assert policy == {
        "id": "pol",
        "action": "REDIRECT_TO_POOL",
        "redirect_pool_id": API,
        "position": 1,
        "rules": [{"id": "r1", "type": "PATH", "compare_type": "STARTS_WITH", "value": "/api",
                   "invert": False}],
    }  # fmt: skip


def test_listener_timeouts_are_carried_and_certificates_are_not() -> None:
    (listener,) = translate.graph(_fully_populated())["listeners"]
    assert {k: v for k, v in listener.items() if k.startswith("timeout_")} == {
        "timeout_client_data": 61000,
        "timeout_member_connect": 4000,
        "timeout_member_data": 62000,
        "timeout_tcp_inspect": 0,
    }
    assert not [k for k in listener if k.endswith("_container_data")]
    lb = _fully_populated()
    standalone = translate.create_body("listener", lb.listeners[0])["listener"]
    assert standalone["timeout_client_data"] == 61000
    changed = Model(listener_id=LISTENER, timeout_member_data=1000, timeout_client_data=2000)
    assert translate.update_body("listener", changed) == {
        "listener": {"timeout_member_data": 1000, "timeout_client_data": 2000}
    }


def test_a_default_pool_missing_from_pools_is_still_created_once() -> None:
    lb = _fully_populated()
    lb.pools = [lb.pools[1]]
    assert [p["id"] for p in translate.graph(lb)["pools"]] == [API, WEB]


def test_a_load_balancer_alone_has_no_tree() -> None:
    lb = Model(loadbalancer_id=LB, listeners=UNSET, pools=[])
    assert translate.graph(lb) == {}
