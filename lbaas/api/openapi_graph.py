"""The single-call load balancer create's nested objects, in the OpenAPI document.

``LoadBalancerCreate`` takes its ``listeners`` and ``pools`` as plain objects and hands
them to the listener and pool schemas itself (``builders.graph_create``), so that errors
name where in the tree they are; pydantic alone would document them as "any object".
This writes the schemas they are validated with into the document: listeners are
``ListenerNested``, and every pool (in ``pools``, a listener's ``default_pool`` or an L7
policy's ``redirect_pool``) is a ``PoolSingleCreate`` with a non-empty ``name`` or an ``id``.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from lbaas.api.schemas.listener import ListenerNested
from lbaas.api.schemas.pool import PoolSingleCreate

_REF = "#/components/schemas/{model}"


def _ref(model: type[Any]) -> dict[str, Any]:
    return {"$ref": _REF.format(model=model.__name__)}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def add_graph_create(schema: dict[str, Any]) -> None:
    """Document the nested objects of a load balancer create (``schema`` is changed)."""
    components: dict[str, Any] = schema.setdefault("components", {}).setdefault("schemas", {})
    if "LoadBalancerCreate" not in components:
        return
    _, top = models_json_schema(
        [(ListenerNested, "validation"), (PoolSingleCreate, "validation")], ref_template=_REF
    )
    for name, definition in top.get("$defs", {}).items():
        components.setdefault(name, definition)
    # "Pools must be named when creating a fully populated loadbalancer." (a given id, an
    # administrator's ``GivenId``, stands in for the name)
    named_pool = {
        "allOf": [_ref(PoolSingleCreate)],
        "anyOf": [
            {"required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}}},
            {"required": ["id"], "properties": {"id": {"type": "string"}}},
        ],
    }
    components["ListenerNested"]["properties"]["default_pool"] = _nullable(named_pool)
    components["L7PolicyNested"]["properties"]["redirect_pool"] = _nullable(named_pool)
    properties = components["LoadBalancerCreate"]["properties"]
    properties["listeners"] = _nullable({"type": "array", "items": _ref(ListenerNested)})
    properties["pools"] = _nullable({"type": "array", "items": named_pool})
