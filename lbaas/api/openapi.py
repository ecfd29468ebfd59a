"""The OpenAPI document, made to say what the API answers and what it accepts.

FastAPI documents each operation's success code and a 422 it never sends (schema failures
are 400s in Octavia's shape, ``lbaas.api.errors``). This adds the error statuses every
operation can answer, with the fault body (pecan's for 405, 406 and a GET's page
parameters, ``query_hook``; Neutron's for every error of the Networking routes), drops the
422, and marks the successes
that carry no body (204, and the 202s of quota reset, failover, config push and the batch
member update) as bodiless; the rules enforced outside the request models are added by
``openapi_rules`` (and ``openapi_graph``, for the nested create) and the links between
operations by ``openapi_links``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from lbaas.api.neutron_errors import NEUTRON_SCHEMA
from lbaas.api.openapi_graph import add_graph_create
from lbaas.api.openapi_links import add_links
from lbaas.api.openapi_rules import add_rules

FAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["faultcode", "faultstring", "debuginfo"],
    "properties": {
        "faultcode": {"type": "string", "enum": ["Client", "Server"]},
        "faultstring": {"type": "string"},
        "debuginfo": {"type": "null"},
    },
}
# What pecan answers outside Octavia's handlers (``errors.pecan_fault``): 405, 406, and a
# GET's bad ``limit`` or sort direction (400, ``query_hook``).
PECAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["code", "title", "description"],
    "properties": {
        "code": {"type": "integer"},
        "title": {"type": "string"},
        "description": {"type": ["string", "null"]},
    },
}
# What any operation may answer besides its success: bad input, policy or quota, missing
# object or parent, wrong state or duplicate, body too large or not JSON, provider refusal,
# busy database.
ERROR_STATUSES = {
    "400": "Bad request: the input is invalid",
    "401": "Not authenticated",
    "403": "Not allowed by policy, or a quota is met",
    "404": "The object or its parent does not exist",
    "405": "Method not allowed at this path",
    "409": "The load balancer is not in a state that allows the change, or a duplicate",
    "413": "The request body is too large",
    "415": "The request body is not JSON",
    "500": "Internal error",
    "501": "Not implemented by the provider",
    "503": "The service is busy or its database unreachable",
}
_METHODS = ("get", "put", "post", "delete", "patch")


def _fault(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _describe(operation: dict[str, Any], method: str) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    responses.pop("422", None)
    for status, response in list(responses.items()):
        if status in ("202", "204") and _empty(response):
            responses[status] = {"description": response.get("description", "No content")}
    if "networking" in operation.get("tags", []):
        # Neutron's body for every error of the Networking routes (``neutron_errors``).
        for status, description in ERROR_STATUSES.items():
            responses.setdefault(status, _fault(description, NEUTRON_SCHEMA))
        responses.setdefault("406", _fault("Accept excludes JSON", NEUTRON_SCHEMA))
        return
    for status, description in ERROR_STATUSES.items():
        responses.setdefault(status, _fault(description, FAULT_SCHEMA))
    responses["405"] = _fault(ERROR_STATUSES["405"], PECAN_SCHEMA)
    responses.setdefault("406", _fault("Accept excludes JSON", PECAN_SCHEMA))
    if method == "get":
        either = {"anyOf": [FAULT_SCHEMA, PECAN_SCHEMA]}
        responses["400"] = _fault(
            ERROR_STATUSES["400"] + " (a bad limit or sort direction in pecan's body)", either
        )


def _empty(response: dict[str, Any]) -> bool:
    """FastAPI documents ``Response``-returning handlers with an empty JSON schema."""
    schemas = [c.get("schema", {}) for c in response.get("content", {}).values()]
    return all(not s for s in schemas)


def describe_errors(app: FastAPI) -> None:
    """Make ``app.openapi()`` document the error answers of every operation."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            for item in schema.get("paths", {}).values():
                for method in _METHODS:
                    if method in item:
                        _describe(item[method], method)
            add_graph_create(schema)
            add_rules(schema, (name for name, _ in app.state.services.providers.listed()))
            add_links(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
