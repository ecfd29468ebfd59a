"""Neutron's wording of a request-schema failure, for the Networking-shaped routes.

The Octavia routes word schema errors as Octavia's WSME does (``lbaas.api.errors``); a
client of ``/v2.0/ports`` or ``/v2.0/security-group-rules`` reads Neutron's sentences
instead, which the stock CLI shows as they are:

* an unknown key: ``Unrecognized attribute(s) 'a, b'``;
* a missing required one: ``Failed to parse request. Required attribute 'x' not specified``;
* no resource key at all: ``Unable to find 'port' in request body``;
* a bad value: ``Invalid input for <attribute>. Reason: <why>.``, the reason in the words of
  Neutron's validators (``'x' is not an integer``, ``'up' is not in ['egress', 'ingress']``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_BODY = ("body", "query", "path")


def _attribute(loc: Sequence[Any]) -> list[str]:
    return [str(p) for p in loc if p not in _BODY and not str(p).isdigit()]


def _reason(err: Any) -> str:
    kind = err.get("type", "")
    value = err.get("input")
    ctx = err.get("ctx") or {}
    if kind in ("enum", "literal_error"):
        allowed = [
            v.strip().strip("'")
            for v in str(ctx.get("expected", "")).replace(" or ", ", ").split(",")
        ]
        return f"'{value}' is not in {sorted(v for v in allowed if v)}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"'{value}' is not an integer"
    if kind in ("greater_than_equal", "greater_than"):
        return f"'{value}' is too small - must be at least '{ctx.get('ge', ctx.get('gt'))}'"
    if kind in ("less_than_equal", "less_than"):
        return f"'{value}' is too large - must be no larger than '{ctx.get('le', ctx.get('lt'))}'"
    if kind == "string_too_long":
        return f"'{value}' exceeds maximum length of {ctx.get('max_length')}"
    if kind in ("bool_parsing", "bool_type"):
        return f"'{value}' cannot be converted to boolean"
    if kind in ("uuid_parsing", "uuid_type"):
        return f"'{value}' is not a valid UUID"
    if kind in ("string_type",):
        return f"'{value}' is not a valid string"
    if kind in ("list_type",):
        return f"'{value}' is not a list"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"'{value}' is not a dictionary"
    return str(err.get("msg", "invalid value")).removeprefix("Value error, ")


def neutron_validation_message(errors: Sequence[Any], wrapper: str | None) -> str:
    """Neutron's sentence for the first schema problem (every unknown key at once);
    ``wrapper`` is the body's resource key (``port``, ``security_group_rule``)."""
    unknown = [_attribute(e["loc"])[-1] for e in errors if e.get("type") == "extra_forbidden"]
    if unknown:
        return f"Unrecognized attribute(s) '{', '.join(unknown)}'"
    err = errors[0]
    if err.get("type") in ("json_invalid", "json_type"):
        return "Malformed request body"
    path = _attribute(err.get("loc", ()))
    if err.get("type") == "missing":
        if len(path) <= 1 and wrapper is not None and path in ([], [wrapper]):
            return f"Unable to find '{wrapper}' in request body"
        return f"Failed to parse request. Required attribute '{path[-1]}' not specified"
    where = path[-1] if path else (wrapper or "body")
    return f"Invalid input for {where}. Reason: {_reason(err)}."
