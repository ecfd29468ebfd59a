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
