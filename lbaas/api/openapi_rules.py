"""Rules the API enforces outside the request models, written into the OpenAPI document.

The pydantic models describe their own fields (types, lengths, patterns, enums: see
``lbaas.api.schemas``). Two rules live elsewhere and are added here, from the same
constants the code that enforces them uses:

* No string may hold a NUL character or an unpaired surrogate: ``request_guard`` refuses
  them in the URL (path and query), ``json_body`` anywhere in a body, keys included.
  Every string schema without a pattern or enum of its own gets ``STORABLE_PATTERN``;
  every object with free keys gets it as ``propertyNames``.
* A provider name is one of the enabled providers (and their aliases), which only the
  running service knows: fields marked ``PROVIDER_MARK`` and the ``{provider}`` path
  parameter become an ``enum`` of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from lbaas.api.schemas.types import EMPTY_IS_DEFAULT, PROVIDER_MARK
from lbaas.identity.context import PROJECT_ID_MAX

# A JSON Schema (ECMA 262) pattern: any characters but NUL and lone UTF-16 surrogates.
STORABLE_PATTERN = "^[^\\u0000]*$"
_METHODS = ("get", "put", "post", "delete", "patch")
# The 400s a request valid by the document may still get: Octavia's semantic refusals,
# which weigh one field against another or against stored objects, and which no JSON
# Schema states. Anything else refused with a 400 is a rule the document omits (the
# schemathesis bench and tests/fuzz hold the API to that).
SEMANTIC_REFUSAL = re.compile(
    r"^Validation failure: "
    r"|does not support a requested option"
    # a profile's keys are those of the provider named beside it
    r"| is not a valid option for (flavor_data|availability_zone_data)"
    # a reference to an object that does not exist: Octavia's wording, then lbaas's
    r"| is not a valid option for \w+_profile_id$"
    r"|^(Subnet|Network|Port) \S+ not found\.$"
    # an unpaired UTF-16 surrogate, which JSON Schema has no way to forbid (NUL, which it
    # has, is in every string's pattern): docs/api-compat.md
    r"|Strings may not contain NUL characters or unpaired surrogates\.$"
)
_PROVIDER_PARAMETERS = {"provider"}


def _constrain(node: Any, providers: list[str]) -> None:
    """Add the rules to one schema node and everything under it."""
    if isinstance(node, list):
        for item in node:
            _constrain(item, providers)
        return
    if not isinstance(node, dict):
        return
    mark = node.pop(PROVIDER_MARK, None)
    if mark:
        node["enum"] = [*providers, ""] if mark == EMPTY_IS_DEFAULT else list(providers)
    if node.get("type") == "string" and "pattern" not in node and "enum" not in node:
        node["pattern"] = STORABLE_PATTERN
    if node.get("type") == "object" and node.get("additionalProperties", True) is not False:
        node.setdefault("propertyNames", {"pattern": STORABLE_PATTERN})
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions"):
            for child in value.values():
                _constrain(child, providers)
        elif isinstance(value, dict | list) and key not in ("enum", "required", "examples"):
            _constrain(value, providers)


def _operations(schema: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for item in schema.get("paths", {}).values():
        for method in _METHODS:
            if method in item:
                yield item[method]


def _quota_project_length(schema: dict[str, Any]) -> None:
    """A quota PUT refuses a project id longer than Octavia's 36 characters (its handler
    says so in Octavia's words); GET and DELETE take any."""
    put = schema.get("paths", {}).get("/v2/lbaas/quotas/{project_id}", {}).get("put", {})
    for parameter in put.get("parameters", []):
        if parameter.get("in") == "path" and parameter.get("name") == "project_id":
            parameter.setdefault("schema", {})["maxLength"] = PROJECT_ID_MAX


def add_rules(schema: dict[str, Any], providers: Iterable[str]) -> None:
    """Write the rules into ``schema`` (an OpenAPI document, changed in place)."""
    names = sorted(set(providers))
    _quota_project_length(schema)
    _constrain(schema.get("components", {}).get("schemas", {}), names)
    for operation in _operations(schema):
        for parameter in operation.get("parameters", []):
            if parameter.get("in") in ("path", "query"):
                if parameter.get("in") == "path" and parameter.get("name") in _PROVIDER_PARAMETERS:
                    parameter.setdefault("schema", {})[PROVIDER_MARK] = True
                _constrain(parameter.get("schema", {}), names)
        body = operation.get("requestBody", {}).get("content", {})
        for media in body.values():
            _constrain(media.get("schema", {}), names)
