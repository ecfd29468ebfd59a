"""Mapping every error to Octavia's body, in one place.

Handlers raise ``lbaas.errors.ApiError`` subclasses; request-schema failures arrive as
FastAPI's ``RequestValidationError``. Both become ``{"faultcode", "faultstring",
"debuginfo"}`` with the status and wording python-octaviaclient shows users: "Unknown
attribute for argument …", "Invalid input for field/attribute … Value: '…'. …", and so on.
Anything unexpected is a 500 with a generic message; the detail goes to the log only.
Requests to the Networking-shaped routes get the same status in Neutron's body
(``neutron_errors``), schema failures in Neutron's words (``neutron_wording``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from lbaas.api.neutron_errors import is_networking_path, neutron_fault
from lbaas.api.neutron_wording import neutron_validation_message
from lbaas.api.query_hook import HookRefused
from lbaas.errors import ApiError
from lbaas.model.enums import EXTENSION_VALUES

LOG = logging.getLogger(__name__)


def fault(status: int, message: str) -> JSONResponse:
    return JSONResponse(
        {
            "faultcode": "Client" if status < 500 else "Server",
            "faultstring": message,
            "debuginfo": None,
        },
        status_code=status,
    )


def answer(path: str, status: int, message: str, neutron_type: str | None = None) -> JSONResponse:
    """The error body for a request to ``path``: Neutron's on the Networking routes,
    Octavia's everywhere else."""
    if is_networking_path(path):
        return neutron_fault(status, message, neutron_type)
    return fault(status, message)


#: What a Networking path no route serves (404) or a method it does not take (405) says.
_NOT_ROUTED = {
    404: "The resource could not be found.",
    405: "The method is not allowed for this resource.",
}


def pecan_fault(status: int, description: str | None) -> JSONResponse:
    """The body pecan gives what fails outside Octavia's WSME handlers: a path no
    controller serves (404), a method it does not take (405), the checks of its query
    hook (400, ``query_hook``)."""
    return JSONResponse(
        {"code": status, "title": HTTPStatus(status).phrase, "description": description},
        status_code=status,
    )


def _routing_description(request: Request) -> str | None:
    """What pecan says of a path or method it cannot route: ``""`` under ``/v2``, where
    Octavia's REST controllers ``abort`` (Octavia 19: ``GET /v2/lbaas/nothing``,
    ``PATCH /v2/lbaas/loadbalancers/<id>``), ``null`` above them, where pecan's router
    raises a bare 404 (``GET /nothing``)."""
    first = request.url.path.lstrip("/").split("/", 1)[0]
    return "" if first in ("v2", "v2.0") else None


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


# The name each Octavia handler gives its body argument. WSME starts the path of an
# unknown attribute with it ("listener_.listener: bogus") and names it in the errors of
# values it cannot convert (a whole-body message, see ``_conversion_reason``).
BODY_ARGUMENT = {
    "loadbalancer": "load_balancer",
    "listener": "listener_",
    "pool": "pool_",
    "member": "member_",
    "members": "members_",
    "healthmonitor": "health_monitor_",
    "l7policy": "l7policy_",
    "rule": "rule_",
    "quota": "quotas",
    "flavor": "flavor_",
    "flavorprofile": "flavor_profile_",
    "availability_zone": "availability_zone_",
    "availability_zone_profile": "availability_zone_profile_",
}

# WSME checks these at the attribute (``Value: '<the value>'``).
_FRIENDLY = {
    "uuid_format": "Value should be UUID format",
    "int_type": "Value should be an integer",
    "int_from_float": "Value should be an integer",
    "string_type": "Value should be string",
    "model_type": "Value should be an object",
    "model_attributes_type": "Value should be an object",
    "float_parsing": "Value should be a number",
    "float_type": "Value should be a number",
}


def _reason(err: Any) -> str:
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    if kind in ("greater_than_equal", "greater_than"):
        return f"Value should be greater or equal to {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"Value should be lower or equal to {ctx.get('le', ctx.get('lt'))}"
    if kind == "string_too_long":
        return f"Value should have a maximum character requirement of {ctx.get('max_length')}"
    if kind == "string_too_short":
        return f"Value should have a minimum character requirement of {ctx.get('min_length')}"
    if kind in ("enum", "literal_error"):
        # pydantic says "'A', 'B' or 'C'"; Octavia lists them "A, B, C".
        listed = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        expected = [v for v in listed.split(", ") if v not in EXTENSION_VALUES]
        return f"Value should be one of: {', '.join(expected)}"
    if kind in _FRIENDLY:
        return _FRIENDLY[kind]
    message = str(err.get("msg", "invalid value"))
    return message.removeprefix("Value error, ")


_NOT_CONVERTED = {
    "bool_parsing": "Value not an unambiguous boolean",
    "bool_type": "Value not an unambiguous boolean",
    "list_type": "Value not a valid list",
    "dict_type": "Value not a valid dict",
}


def _conversion_reason(err: Any) -> str | None:
    """WSME's words for a value it cannot convert (JSON -> bool, int, list, dict), or None.

    WSME converts before it validates, and reports a failed conversion against the whole
    body argument rather than the attribute."""
    kind, value = err.get("type", ""), err.get("input")
    if kind in _NOT_CONVERTED:
        return f"{_NOT_CONVERTED[kind]}: {value}"
    if kind == "int_parsing" and isinstance(value, str):
        try:
            int(value)
        except ValueError as exc:
            return str(exc)
    return None


def _path(loc: Sequence[Any], wrapper: str | None) -> list[str]:
    """The location as WSME names it: the body argument first, no list indices."""
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    names = [p for p in parts if not p.isdigit() and "[" not in p and "function-" not in p]
    if names and names[0] in BODY_ARGUMENT:
        return [BODY_ARGUMENT[names[0]], *names]
    if wrapper is not None:
        return [BODY_ARGUMENT.get(wrapper, wrapper), *names]
    return names


def _unknown_attributes(errors: Sequence[Any], wrapper: str | None) -> str | None:
    extras: dict[str, list[str]] = {}
    for err in errors:
        if err.get("type") == "extra_forbidden":
            path = _path(err["loc"], wrapper)
            extras.setdefault(".".join(path[:-1]) or "body", []).append(path[-1])
    if not extras:
        return None
    where, names = next(iter(extras.items()))
    noun = "attribute" if len(names) == 1 else "attributes"
    return f"Unknown {noun} for argument {where}: {', '.join(names)}"


def validation_message(errors: Sequence[Any], wrapper: str | None = None, body: Any = None) -> str:
    """Octavia's wording for the first schema problem (all unknown keys at once).

    ``wrapper`` is the body's top-level key (for unknown keys beside it) and ``body`` the
    decoded request body (WSME quotes it whole when a value cannot be converted)."""
    unknown = _unknown_attributes(errors, wrapper)
    if unknown is not None:
        return unknown
    err = errors[0]
    if err.get("type") in ("json_invalid", "json_type"):
        return "Request is not in valid JSON format"
    path = _path(err.get("loc", ()), None)
    field = path[-1] if path else BODY_ARGUMENT.get(wrapper or "", "body")
    if err.get("type") == "missing":
        return f"Invalid input for field/attribute {field}. Value: 'None'. Mandatory field missing."
    conversion = _conversion_reason(err)
    if conversion is not None and body is not None and path:
        return f"Invalid input for field/attribute {path[0]}. Value: '{body}'. {conversion}"
    reason = conversion or _reason(err)
    return f"Invalid input for field/attribute {field}. Value: '{_value_text(err.get('input'))}'. {reason}"


def _body_wrapper(request: Request) -> str | None:
    """The single top-level key of the route's request body model, if it has one."""
    field = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(getattr(field, "field_info", None), "annotation", None)
    names = list(getattr(model, "model_fields", {}))
    return names[0] if len(names) == 1 else None


# Media types WSME decodes as JSON; any other body is refused with 415.
JSON_MEDIA_TYPES = frozenset({"application/json", "text/javascript", "application/javascript"})


def unsupported_media_type(request: Request) -> str | None:
    """The declared media type when it is one WSME would refuse, else None. A request
    without Content-Type is read as JSON (curl and scripts often omit it)."""
    declared = request.headers.get("content-type")
    if declared is None:
        return None
    media = declared.split(";", 1)[0].strip().lower()
    return None if media in JSON_MEDIA_TYPES else media


def allowed_methods(request: Request) -> list[str]:
    """The methods the OpenAPI document lists for this path: those of the most specific
    template that matches it (``/quotas/defaults`` before ``/quotas/{project_id}``).
    Starlette's own 405 names only the methods of the first route that matched."""
    best: tuple[int, list[str]] | None = None
    for template, item in request.app.openapi().get("paths", {}).items():
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, request.url.path):
            params = template.count("{")
            if best is None or params < best[0]:
                best = (params, [m.upper() for m in item])
    return best[1] if best is not None else []


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        if isinstance(exc, HookRefused):
            return pecan_fault(exc.status_code, exc.message)
        return answer(request.url.path, exc.status_code, exc.message, exc.neutron_type)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        media = unsupported_media_type(request)
        if media is not None:
            return answer(request.url.path, 415, f"Unknown mimetype: {media}")
        if is_networking_path(request.url.path):
            words = neutron_validation_message(exc.errors(), _body_wrapper(request))
            return neutron_fault(400, words)
        message = validation_message(exc.errors(), _body_wrapper(request), exc.body)
        return answer(request.url.path, 400, message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        path = request.url.path
        if exc.status_code in _NOT_ROUTED and is_networking_path(path):
            response = neutron_fault(exc.status_code, _NOT_ROUTED[exc.status_code])
        elif exc.status_code in _NOT_ROUTED:
            # No route, or not this method: pecan's routing answers those in Octavia.
            response = pecan_fault(exc.status_code, _routing_description(request))
        else:
            response = answer(path, exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:
            response.headers["Allow"] = ", ".join(allowed_methods(request))
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        LOG.exception("unhandled error on %s %s", request.method, request.url.path)
        return answer(request.url.path, 500, "Internal server error.")
