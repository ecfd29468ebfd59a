"""Mapping every error to Octavia's body, in one place.

Handlers raise ``lbaas.errors.ApiError`` subclasses; request-schema failures arrive as
FastAPI's ``RequestValidationError``. Both become ``{"faultcode", "faultstring",
"debuginfo"}`` with the status and wording python-octaviaclient shows users: "Unknown
attribute for argument …", "Invalid input for field/attribute … Value: '…'. …", and so on.
Anything unexpected is a 500 with a generic message; the detail goes to the log only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from lbaas.errors import ApiError

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


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


_FRIENDLY = {
    "uuid_format": "Value should be UUID format",
    "int_parsing": "Value should be an integer",
    "int_type": "Value should be an integer",
    "int_from_float": "Value should be an integer",
    "bool_parsing": "Value not an unambiguous boolean",
    "bool_type": "Value not an unambiguous boolean",
    "list_type": "Value not a valid list",
    "string_type": "Value should be a string",
    "dict_type": "Value should be an object",
    "model_type": "Value should be an object",
    "float_parsing": "Value should be a number",
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
        return f"Value should be one of: {ctx.get('expected', '')}".replace("'", "")
    if kind in _FRIENDLY:
        return _FRIENDLY[kind]
    message = str(err.get("msg", "invalid value"))
    return message.removeprefix("Value error, ")


def validation_message(errors: Sequence[Any]) -> str:
    """Octavia's wording for the first schema problem (all unknown keys at once)."""
    extras: dict[str, list[str]] = {}
    for err in errors:
        if err.get("type") == "extra_forbidden":
            loc = [str(p) for p in err["loc"] if p != "body"]
            extras.setdefault(".".join(loc[:-1]) or "body", []).append(loc[-1])
    if extras:
        where, names = next(iter(extras.items()))
        noun = "attribute" if len(names) == 1 else "attributes"
        return f"Unknown {noun} for argument {where}: {', '.join(names)}"
    err = errors[0]
    loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
    # Drop list indices and pydantic's union/function tags so the field name is last.
    names = [p for p in loc if not p.isdigit() and "[" not in p and "function-" not in p]
    field = names[-1] if names else "body"
    if err.get("type") == "missing":
        return f"Invalid input for field/attribute {field}. Value: 'None'. Mandatory field missing."
    if err.get("type") in ("json_invalid", "json_type"):
        return "Malformed JSON"
    return f"Invalid input for field/attribute {field}. Value: '{_value_text(err.get('input'))}'. {_reason(err)}"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> Response:
        return fault(exc.status_code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> Response:
        return fault(400, validation_message(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> Response:
        return fault(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        LOG.exception("unhandled error on %s %s", request.method, request.url.path)
        return fault(500, "Internal server error.")
