"""Request schemas of health monitors.

``HealthMonitorSingleCreate`` is a monitor as it appears inside a pool of the single-call
load balancer create (no ``pool_id``); ``HealthMonitorCreate`` is the standalone POST.
Syntax of ``url_path``, ``expected_codes``, ``http_version`` and ``domain_name`` is
checked here, so a bad value is the usual "Invalid input for field/attribute …" error;
rules that depend on the type or the pool are checked by the router. A new optional
monitor field goes into ``HealthMonitorOptions``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from lbaas.api.schemas.groups import (
    EnabledChange,
    EnabledOnCreate,
    GivenId,
    Named,
    ProjectOnCreate,
    Tagged,
)
from lbaas.api.schemas.types import Schema, Uuid
from lbaas.api.validation.healthmonitor import (
    DEFAULT_MAX_RETRIES_DOWN,
    DOMAIN_NAME_PATTERN,
    URL_PATH_PATTERN,
    is_domain_name,
    is_expected_codes,
    is_url_path,
)
from lbaas.model.enums import HealthMonitorType, HttpMethod
from lbaas.render.haproxy.inputs import EXPECTED_CODES_LIST

MAX_INT = 2147483647
HTTP_VERSIONS = (1.0, 1.1)


def _url_path(value: str) -> str:
    if not is_url_path(value):
        raise PydanticCustomError("url_path", "Not a valid URLPath: {value}", {"value": value})
    return value


def _expected_codes(value: str) -> str:
    if not is_expected_codes(value):
        raise PydanticCustomError(
            "expected_codes",
            "Value should be a status code, a comma separated list of codes, or a range",
        )
    return value


def _domain_name(value: str) -> str:
    if not is_domain_name(value):
        raise PydanticCustomError("domain_name", "Value should be a valid host name")
    return value


def _http_version(value: object) -> object:
    if value is None:
        return None
    if not isinstance(value, bool) and isinstance(value, int | float | str):
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if number in HTTP_VERSIONS:
            return number
    raise PydanticCustomError("http_version", "Value should be one of: 1.0, 1.1")


def _null_is_default_retries_down(value: object) -> object:
    return DEFAULT_MAX_RETRIES_DOWN if value is None else value


Seconds = Annotated[int, Field(ge=0, le=MAX_INT)]
Retries = Annotated[int, Field(ge=1, le=10)]
# The validators decide; ``json_schema_extra`` tells the OpenAPI document what they accept
# (a range of codes, "200-204", is accepted too, but a pattern cannot say "start <= end").
UrlPath = Annotated[
    str,
    Field(max_length=2048, json_schema_extra={"pattern": URL_PATH_PATTERN}),
    AfterValidator(_url_path),
]
ExpectedCodes = Annotated[
    str,
    Field(max_length=64, json_schema_extra={"pattern": f"^{EXPECTED_CODES_LIST}$"}),
    AfterValidator(_expected_codes),
]
HttpVersion = Annotated[
    float | None,
    BeforeValidator(_http_version),
    Field(json_schema_extra={"enum": [*HTTP_VERSIONS, None]}),
]
DomainName = Annotated[
    str,
    Field(json_schema_extra={"pattern": DOMAIN_NAME_PATTERN, "maxLength": 255}),
    AfterValidator(_domain_name),
]


class HealthMonitorOptions(Named, Tagged):
    """Fields both create and update accept (all optional); the HTTP check's details."""

    http_method: HttpMethod | None = None
    url_path: UrlPath | None = None
    expected_codes: ExpectedCodes | None = None
    http_version: HttpVersion = None
    domain_name: DomainName | None = None


class HealthMonitorSingleCreate(HealthMonitorOptions, EnabledOnCreate, GivenId):
    type: HealthMonitorType
    delay: Seconds
    timeout: Seconds
    max_retries: Retries
    max_retries_down: Annotated[Retries, BeforeValidator(_null_is_default_retries_down)] = (
        DEFAULT_MAX_RETRIES_DOWN
    )


class HealthMonitorCreate(HealthMonitorSingleCreate, ProjectOnCreate):
    pool_id: Uuid


class HealthMonitorCreateBody(Schema):
    healthmonitor: HealthMonitorCreate


# What a PUT may change: the options, plus the timing a create requires.
class HealthMonitorUpdate(HealthMonitorOptions, EnabledChange):
    delay: Seconds | None = None
    timeout: Seconds | None = None
    max_retries: Retries | None = None
    max_retries_down: Retries | None = None


class HealthMonitorUpdateBody(Schema):
    healthmonitor: HealthMonitorUpdate
