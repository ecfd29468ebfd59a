"""octavia-lib's data-model objects into the bodies of lbaas's Octavia-v2 API calls.

lbaas speaks Octavia's v2 API, so a provider object is mostly the API's own JSON: its
``<kind>_id`` becomes ``id`` (lbaas's ``GivenId`` extension keeps Octavia's ids), nested
children are left out (each comes in its own call), and the fields no such call takes are
dropped. Certificate material (``*_container_data``) never leaves Octavia: lbaas is given
the references and reads the secrets itself, as Octavia's own drivers do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Marks lbaas's load balancers an Octavia owns (the provider agent's rounds list them).
TAG = "octavia-provider"
# octavia-lib's Unset marker, nested models and lists of them are not request fields.
_MODEL_TYPES = ("UnsetType",)


@dataclass(frozen=True)
class Kind:
    """How one kind of object travels: its id attribute, the wrapper of its JSON body,
    and the attributes a create or an update does not send."""

    id_attr: str
    wrapper: str
    create_skips: frozenset[str]
    update_skips: frozenset[str]


def _kind(id_attr: str, wrapper: str, create: set[str], update: set[str]) -> Kind:
    common = {"project_id"}
    return Kind(id_attr, wrapper, frozenset(create), frozenset(create | update | common))


KINDS = {
    "loadbalancer": _kind(
        "loadbalancer_id",
        "loadbalancer",
        {
            "listeners",
            "pools",
            "flavor",
            "availability_zone",
            "additional_vips",
            "vip_address",
            "vip_network_id",
            "vip_port_id",
            "vip_subnet_id",
        },
        set(),
    ),
    "listener": _kind(
        "listener_id",
        "listener",
        {"default_pool", "l7policies"},
        {"loadbalancer_id", "protocol", "protocol_port"},
    ),
    "pool": _kind(
        "pool_id",
        "pool",
        {"healthmonitor", "members"},
        {"loadbalancer_id", "listener_id", "protocol"},
    ),
    "member": _kind(
        "member_id",
        "member",
        {"pool_id", "vnic_type"},
        {"address", "protocol_port", "subnet_id"},
    ),
    "healthmonitor": _kind("healthmonitor_id", "healthmonitor", set(), {"pool_id", "type"}),
    "l7policy": _kind("l7policy_id", "l7policy", {"rules"}, {"listener_id"}),
    "l7rule": _kind("l7rule_id", "rule", {"l7policy_id"}, set()),
}


def _plain(value: Any) -> bool:
    """A request value: not Unset, not a nested model or a list of them."""
    if type(value).__name__ in _MODEL_TYPES or hasattr(value, "to_dict"):
        return False
    if isinstance(value, list):
        return not any(hasattr(item, "to_dict") for item in value)
    return True


def fields(obj: Any) -> dict[str, Any]:
    """The attributes the object was given (Unset ones and nested models left out), and
    never certificate material."""
    return {
        name: value
        for name, value in vars(obj).items()
        if not name.startswith("_") and not name.endswith("_data") and _plain(value)
    }


def object_id(kind: str, obj: Any) -> str:
    return str(getattr(obj, KINDS[kind].id_attr))


def create_body(kind: str, obj: Any) -> dict[str, Any]:
    """The body of the create: Octavia's id as ``id``, nulls left to lbaas's defaults."""
    spec = KINDS[kind]
    sent = fields(obj)
    body = {
        name: value
        for name, value in sent.items()
        if name not in spec.create_skips and name != spec.id_attr and value is not None
    }
    body["id"] = str(sent[spec.id_attr])
    if kind != "loadbalancer":
        body.pop("project_id", None)  # children belong to their load balancer's project
    if kind == "member" and sent.get("vnic_type") == "direct":
        body["request_sriov"] = True
    return {spec.wrapper: body}


def update_body(kind: str, new: Any) -> dict[str, Any]:
    """The body of the update: what Octavia passes in ``new`` (the changed attributes),
    less its id and what cannot change."""
    spec = KINDS[kind]
    body = {
        name: value
        for name, value in fields(new).items()
        if name not in spec.update_skips and name != spec.id_attr
    }
    return {spec.wrapper: body}


def vip_fields(lb: Any, wanted: tuple[str, ...]) -> dict[str, Any]:
    """The VIP of a new load balancer as lbaas is to take it (settings ``vip_fields``):
    the subnet and address Octavia settled on, and its port where lbaas adopts it."""
    sent = fields(lb)
    names = {
        "subnet": "vip_subnet_id",
        "address": "vip_address",
        "port": "vip_port_id",
        "network": "vip_network_id",
    }
    out = {names[w]: sent[names[w]] for w in wanted if sent.get(names[w]) is not None}
    extra = [
        {
            "subnet_id": v["subnet_id"],
            **({"ip_address": v["ip_address"]} if v.get("ip_address") else {}),
        }
        for v in sent.get("additional_vips") or []
        if isinstance(v, dict) and v.get("subnet_id")
    ]
    if extra:
        out["additional_vips"] = extra
    return out


def batch_body(members: list[Any]) -> dict[str, Any]:
    """The body of a member batch: every member the pool is to have, new ones with the ids
    Octavia gave them (lbaas matches the others by address and port)."""
    return {"members": [create_body("member", m)["member"] for m in members]}
