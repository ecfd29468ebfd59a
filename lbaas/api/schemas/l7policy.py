"""Request schemas of L7 policies: standalone POST/PUT and the graph-create shape.

The action/redirect interplay (a redirect field picks the action, REJECT drops them) is
decided by ``lbaas.api.validation.l7`` on the keys actually sent, so every redirect field
here is optional and ``action`` is only required on create.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from lbaas.api.schemas.groups import (
    Described,
    EnabledChange,
    EnabledOnCreate,
    GivenId,
    ProjectOnCreate,
)
from lbaas.api.schemas.l7rule import L7RuleNested
from lbaas.api.schemas.types import Schema, Uuid
from lbaas.api.validation.l7 import REDIRECT_CODES
from lbaas.model.enums import L7PolicyAction


def _url(value: str) -> str:
    """An absolute http(s) URL with a host and no whitespace or control characters."""
    bad = PydanticCustomError("url_format", "Value should be an absolute http or https URL")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in value):
        raise bad
    try:
        parts = urlsplit(value)
        _ = parts.port
    except ValueError:
        raise bad from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise bad
    return value


def _redirect_code(value: int) -> int:
    if value not in REDIRECT_CODES:
        raise PydanticCustomError(
            "enum",
            "Value should be one of: {expected}",
            {"expected": ", ".join(str(c) for c in REDIRECT_CODES)},
        )
    return value


# For the OpenAPI document: a part of what ``_url`` accepts (host names without user or
# IPv6 literal, ports below 10000), which any generated value must pass.
URL_PATTERN = r"^[hH][tT][tT][pP][sS]?://[A-Za-z0-9][A-Za-z0-9.-]*(?::[0-9]{1,4})?(?:[/?#][!-~]*)?$"
RedirectUrl = Annotated[
    str, Field(max_length=255, json_schema_extra={"pattern": URL_PATTERN}), AfterValidator(_url)
]
RedirectCode = Annotated[
    int, AfterValidator(_redirect_code), Field(json_schema_extra={"enum": list(REDIRECT_CODES)})
]
Position = Annotated[int, Field(ge=1, le=2147483647)]


class L7PolicyOptions(Described):
    """Fields both create and update accept (all optional)."""

    redirect_pool_id: Uuid | None = None
    redirect_url: RedirectUrl | None = None
    redirect_prefix: RedirectUrl | None = None
    redirect_http_code: RedirectCode | None = None
    position: Position | None = None


class L7PolicyCommon(L7PolicyOptions, EnabledOnCreate):
    """A policy as created, standalone or nested in a listener of the graph create."""

    action: L7PolicyAction
    rules: list[L7RuleNested] | None = None


class L7PolicyCreate(L7PolicyCommon, ProjectOnCreate):
    listener_id: Uuid


class L7PolicyCreateBody(Schema):
    l7policy: L7PolicyCreate


class L7PolicyNested(L7PolicyCommon, GivenId):
    """Graph create: ``redirect_pool`` is a pool definition or ``{"name": …}`` reference;
    ``redirect_pool_id`` may name a pool of the same body by its given id."""

    redirect_pool: dict[str, Any] | None = None


# What a PUT may change: the options, plus the action a create requires.
class L7PolicyUpdate(L7PolicyOptions, EnabledChange):
    action: L7PolicyAction | None = None


class L7PolicyUpdateBody(Schema):
    l7policy: L7PolicyUpdate
