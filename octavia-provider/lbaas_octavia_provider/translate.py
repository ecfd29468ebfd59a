"""octavia-lib's data-model objects into the bodies of lbaas's Octavia-v2 API calls.

lbaas speaks Octavia's v2 API, so a provider object is mostly the API's own JSON: its
``<kind>_id`` becomes ``id`` (lbaas's ``GivenId`` extension keeps Octavia's ids), nested
children are left out (each comes in its own call), and the fields no such call takes are
dropped. Certificate material (``*_container_data``) never leaves Octavia: lbaas is given
the references and reads the secrets itself, as Octavia's own drivers do. Every other
field is carried over (the listener timeouts ``timeout_*_data`` too), so that what lbaas's
provider cannot honour is refused by lbaas, never dropped here.

A single-call ("fully populated") create is one body (``graph``): every object nested as
lbaas's single-call create takes it, each with Octavia's id, pools at the top level once
each, and listeners and L7 policies naming theirs by id (``default_pool_id``,
``redirect_pool_id``), so unnamed and shared pools need no names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Marks lbaas's load balancers an Octavia owns (the provider agent's rounds list them).
TAG = "octavia-provider"
# octavia-lib's Unset marker, nested models and lists of them are not request fields.
_MODEL_TYPES = ("UnsetType",)
# The attributes holding certificate and key material (not the references to it).
_SECRETS = "_container_data"
# What a nested object of a single-call create leaves out: its parents' ids (the nesting
# says them; a pool's listener is the listener naming it as ``default_pool_id``).
_PARENT_IDS = {
    "listener": ("loadbalancer_id",),
    "pool": ("loadbalancer_id", "listener_id"),
    "member": ("pool_id",),
    "healthmonitor": ("pool_id",),
    "l7policy": ("listener_id",),
    "l7rule": ("l7policy_id",),
}


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
    never certificate material. ``obj`` is a data model or, as the driver agent's get
    socket answers, its dictionary."""
    given = obj.items() if isinstance(obj, dict) else vars(obj).items()
    return {
        name: value
        for name, value in given
        if not name.startswith("_") and not name.endswith(_SECRETS) and _plain(value)
    }


def object_id(kind: str, obj: Any) -> str:
    name = KINDS[kind].id_attr
    return str(obj[name] if isinstance(obj, dict) else getattr(obj, name))


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


def _nested_object(value: Any) -> bool:
    # Octavia nests models, or their dictionaries (the get socket's answers, the rules of
    # a policy it built from its database).
    return isinstance(value, dict) or hasattr(value, "to_dict")


def _child(obj: Any, name: str) -> Any | None:
    """A nested object (a listener's default pool, a pool's monitor), or None."""
    value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return value if _nested_object(value) else None


def children(obj: Any, name: str) -> list[Any]:
    """A list of nested objects (Unset or None is none)."""
    value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return [v for v in value if _nested_object(v)] if isinstance(value, list) else []


def _nested(kind: str, obj: Any) -> dict[str, Any]:
    body: dict[str, Any] = create_body(kind, obj)[KINDS[kind].wrapper]
    for name in _PARENT_IDS[kind]:
        body.pop(name, None)
    return body


def graph_pools(lb: Any) -> list[Any]:
    """Every pool of the graph, once: the load balancer's, and any a listener holds only
    as its default pool (a pool shared by a listener and an L7 policy is one object)."""
    found: dict[str, Any] = {}
    defaults = [_child(li, "default_pool") for li in children(lb, "listeners")]
    for pool in [*children(lb, "pools"), *[d for d in defaults if d is not None]]:
        found.setdefault(object_id("pool", pool), pool)
    return list(found.values())


def pool_body(pool: Any) -> dict[str, Any]:
    """A pool as lbaas's single-call create nests it, with its members and monitor."""
    body = _nested("pool", pool)
    monitor = _child(pool, "healthmonitor")
    if monitor is not None:
        body["healthmonitor"] = _nested("healthmonitor", monitor)
    members = children(pool, "members")
    if members:
        body["members"] = [_nested("member", m) for m in members]
    return body


def _policy(policy: Any) -> dict[str, Any]:
    """An L7 policy with its rules nested, each with Octavia's id."""
    body = _nested("l7policy", policy)
    rules = children(policy, "rules")
    if rules:
        body["rules"] = [_nested("l7rule", r) for r in rules]
    return body


def policy_create_body(policy: Any) -> dict[str, Any]:
    """A standalone L7 policy create with its rules (from a model or its dictionary)."""
    return {"l7policy": {**_policy(policy), "listener_id": fields(policy)["listener_id"]}}


def listener_body(listener: Any) -> dict[str, Any]:
    """A listener as lbaas's single-call create nests it, with its L7 policies and rules;
    its default pool and redirect pools named by id (they are in the top-level pools)."""
    body = _nested("listener", listener)
    default = _child(listener, "default_pool")
    if default is not None:
        body.setdefault("default_pool_id", object_id("pool", default))
    policies = [_policy(p) for p in children(listener, "l7policies")]
    if policies:
        body["l7policies"] = policies
    return body


def graph(lb: Any) -> dict[str, Any]:
    """The ``listeners`` and ``pools`` of a single-call create's body (empty: none)."""
    out: dict[str, Any] = {}
    listeners = [listener_body(li) for li in children(lb, "listeners")]
    pools = [pool_body(p) for p in graph_pools(lb)]
    if listeners:
        out["listeners"] = listeners
    if pools:
        out["pools"] = pools
    return out
