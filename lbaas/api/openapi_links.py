"""OpenAPI ``links``: which answer gives the ids another operation needs.

A client (or schemathesis's stateful phase) that creates a load balancer learns from the
document that the 201's ``loadbalancer.id`` is the ``lb_id`` of every operation under
``/v2/lbaas/loadbalancers/{lb_id}`` and the ``loadbalancer_id`` of a new listener or pool,
and so on down the tree: listener → pool → member and health monitor, listener → L7
policy → rule, flavor profile → flavor, availability zone profile → availability zone,
quotas, ports, and the registry's subnets for a VIP. Without links a generator only ever
sees random ids, and every operation on an object is a 404.

The links are derived from the paths: an object's item path is its collection path plus
one parameter, and every operation at or under the item path gets a link from the
collection's POST, its other path parameters taken from the POST's own path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_METHODS = ("get", "put", "post", "delete", "patch")
_PARAM = re.compile(r"\{([^}]+)\}")


@dataclass(frozen=True)
class Created:
    """An object made by ``POST collection``, answered as ``{wrapper: {key: ...}}``."""

    collection: str
    wrapper: str
    param: str
    key: str = "id"
    method: str = "post"

    @property
    def item(self) -> str:
        return f"{self.collection}/{{{self.param}}}"

    @property
    def expression(self) -> str:
        return f"$response.body#/{self.wrapper}/{self.key}"


@dataclass(frozen=True)
class Reference:
    """A create body field that names an object made by another POST."""

    source: str  # the collection whose POST made the object
    target: str  # the collection whose POST names it
    wrapper: str  # the target's body wrapper
    field: str


_LBAAS = "/v2/lbaas"
CREATED = (
    Created(f"{_LBAAS}/loadbalancers", "loadbalancer", "lb_id"),
    Created(f"{_LBAAS}/listeners", "listener", "listener_id"),
    Created(f"{_LBAAS}/pools", "pool", "pool_id"),
    Created(f"{_LBAAS}/pools/{{pool_id}}/members", "member", "member_id"),
    Created(f"{_LBAAS}/healthmonitors", "healthmonitor", "hm_id"),
    Created(f"{_LBAAS}/l7policies", "l7policy", "policy_id"),
    Created(f"{_LBAAS}/l7policies/{{l7policy_id}}/rules", "rule", "rule_id"),
    Created(f"{_LBAAS}/flavorprofiles", "flavorprofile", "profile_id"),
    Created(f"{_LBAAS}/flavors", "flavor", "flavor_id"),
    Created(f"{_LBAAS}/availabilityzoneprofiles", "availability_zone_profile", "profile_id"),
    Created(f"{_LBAAS}/availabilityzones", "availability_zone", "name", key="name"),
    Created("/v2.0/ports", "port", "port_id"),
    Created("/v2/ports", "port", "port_id"),
)
# Children whose path names their parent's id otherwise than the parent's item path: the
# rules of an L7 policy are under ``{l7policy_id}``, the policy itself at ``{policy_id}``.
_ALIASES = {"l7policy_id": "policy_id"}
REFERENCES = (
    Reference(f"{_LBAAS}/loadbalancers", f"{_LBAAS}/listeners", "listener", "loadbalancer_id"),
    Reference(f"{_LBAAS}/loadbalancers", f"{_LBAAS}/pools", "pool", "loadbalancer_id"),
    Reference(f"{_LBAAS}/listeners", f"{_LBAAS}/pools", "pool", "listener_id"),
    Reference(f"{_LBAAS}/listeners", f"{_LBAAS}/l7policies", "l7policy", "listener_id"),
    Reference(f"{_LBAAS}/pools", f"{_LBAAS}/healthmonitors", "healthmonitor", "pool_id"),
    Reference(f"{_LBAAS}/flavorprofiles", f"{_LBAAS}/flavors", "flavor", "flavor_profile_id"),
    Reference(
        f"{_LBAAS}/availabilityzoneprofiles",
        f"{_LBAAS}/availabilityzones",
        "availability_zone",
        "availability_zone_profile_id",
    ),
)
# Reads whose first element names an object a create may use (the registry's subnets).
LISTED = (("/v2.0/subnets", "subnets", f"{_LBAAS}/loadbalancers", "loadbalancer", "vip_subnet_id"),)
# A load balancer made on a listed subnet names nothing else (no network, port, flavor,
# zone or children), as a client following the link would send it.
_ON_SUBNET_ONLY = dict.fromkeys(
    (
        "vip_network_id",
        "vip_port_id",
        "vip_address",
        "additional_vips",
        "flavor_id",
        "availability_zone",
        "listeners",
        "pools",
        "vip_qos_policy_id",
        "vip_sg_ids",
    )
)
# Operations under a path parameter set by a PUT (a quota is made by its first PUT).
PUT_ITEMS = ((f"{_LBAAS}/quotas/{{project_id}}", "project_id"),)


def _operations(paths: dict[str, Any], prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """(path, operation) of every operation at ``prefix`` or under it."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path, item in paths.items():
        if path == prefix or path.startswith(prefix + "/"):
            found.extend((path, item[m]) for m in _METHODS if m in item)
    return found


def _link(
    source: dict[str, Any] | None,
    status: str,
    target: dict[str, Any] | None,
    name_suffix: str = "",
    **how: Any,
) -> None:
    """Link ``source``'s ``status`` answer to ``target``; ``how``: parameters, requestBody."""
    if source is None or target is None:
        return
    response = source.get("responses", {}).get(status)
    if response is not None:
        name = target["operationId"] + name_suffix
        response.setdefault("links", {})[name] = {"operationId": target["operationId"], **how}


def _item_links(paths: dict[str, Any], created: Created) -> None:
    source = paths.get(created.collection, {}).get(created.method)
    known = {created.param, *_PARAM.findall(created.collection)}
    for path, target in _operations(paths, created.item):
        names = _PARAM.findall(path)
        if not set(names) <= known:
            continue  # needs the id of an object further down
        parameters = {
            f"path.{n}": created.expression if n == created.param else f"$request.path.{n}"
            for n in names
        }
        _link(source, "201", target, parameters=parameters)
    # Children whose path names the new object's id otherwise (``{l7policy_id}``).
    for alias in (a for a, own in _ALIASES.items() if own == created.param):
        for path, target in _operations(paths, f"{created.collection}/{{{alias}}}"):
            if set(_PARAM.findall(path)) == {alias}:
                _link(source, "201", target, parameters={f"path.{alias}": created.expression})


def add_links(schema: dict[str, Any]) -> None:
    """Add the links between the document's operations (``schema`` is changed)."""
    paths: dict[str, Any] = schema.get("paths", {})
    for created in CREATED:
        _item_links(paths, created)
    made = {c.collection: c for c in CREATED}
    for ref in REFERENCES:
        body = {ref.wrapper: {ref.field: made[ref.source].expression}}
        source, target = paths.get(ref.source, {}), paths.get(ref.target, {})
        _link(source.get("post"), "201", target.get("post"), f"_{ref.field}", requestBody=body)
    for path, collection, target_path, wrapper, field in LISTED:
        fields: dict[str, Any] = {field: f"$response.body#/{collection}/0/id", **_ON_SUBNET_ONLY}
        body = {wrapper: fields}
        source, target = paths.get(path, {}), paths.get(target_path, {})
        _link(source.get("get"), "200", target.get("post"), f"_{field}", requestBody=body)
    for item, param in PUT_ITEMS:
        put = paths.get(item, {}).get("put")
        if put is None:
            continue
        status = next((s for s in ("200", "202") if s in put.get("responses", {})), "200")
        for _path, target in _operations(paths, item):
            if target is not put:
                _link(put, status, target, parameters={f"path.{param}": f"$request.path.{param}"})
