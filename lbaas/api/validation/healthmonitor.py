"""The health monitor rules that need no database: types per pool, HTTP-only fields.

Kept as plain functions of values so the health monitor router, the single-call load
balancer create and the unit tests share them. The syntax checks (``url_path``,
``expected_codes``, ``domain_name``) are predicates the request schema turns into
Octavia's "Invalid input for field/attribute …" errors; the rest raise ``lbaas.errors``
with the reference wording.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from lbaas.errors import InvalidInput, ValidationFailure
from lbaas.model.enums import POOL_HEALTH_MONITOR_TYPES, HealthMonitorType, PoolProtocol
from lbaas.render.haproxy import inputs

HTTP_TYPES = frozenset({HealthMonitorType.HTTP.value, HealthMonitorType.HTTPS.value})
DATAGRAM_ONLY_TYPES = frozenset({HealthMonitorType.UDP_CONNECT.value, HealthMonitorType.SCTP.value})
HTTP_FIELDS = ("http_method", "url_path", "expected_codes")
HTTP_DEFAULTS: Mapping[str, str] = {"http_method": "GET", "url_path": "/", "expected_codes": "200"}
DEFAULT_MAX_RETRIES_DOWN = 3

# fullmatch, not ``^…$``: ``$`` also matches before a final newline.
_PATH_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%\[\]]*")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
# The two rules below as patterns, for the OpenAPI document (no lookarounds: generators
# build strings from them). A domain name is also at most 255 characters long.
_URL_CHAR = r"%[0-9A-Fa-f]{2}|[A-Za-z0-9\-._~!$&'()*+,;=:@?#\[\]]"
URL_PATH_PATTERN = rf"^/(?:(?:{_URL_CHAR})(?:{_URL_CHAR}|/)*)?$"
DOMAIN_NAME_PATTERN = rf"^{_LABEL.pattern}(?:\.{_LABEL.pattern})*\.?$"


def is_url_path(value: str) -> bool:
    """An absolute URI path (query allowed) with no scheme, host, user or port."""
    if not value.startswith("/") or value.startswith("//"):
        return False
    if not _PATH_CHARS.fullmatch(value) or _PERCENT.search(value):
        return False
    parts = urlsplit(value)
    return not parts.scheme and not parts.netloc and parts.path.startswith("/")


def is_expected_codes(value: str) -> bool:
    """One code, a comma list of codes, or a range; every code three ASCII digits."""
    return inputs.is_expected_codes(value)


def is_domain_name(value: str) -> bool:
    """A host name: 1–255 characters, labels of 1–63 letters, digits and inner dashes."""
    if not 1 <= len(value) <= 255:
        return False
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    return all(_LABEL.fullmatch(label) for label in labels)


def check_type_for_pool(hm_type: str, pool_protocol: str) -> None:
    """Which monitor types a pool of each protocol supports (§4.2)."""
    allowed = POOL_HEALTH_MONITOR_TYPES[PoolProtocol(pool_protocol)]
    if HealthMonitorType(hm_type) in allowed:
        return
    if hm_type in DATAGRAM_ONLY_TYPES:
        raise ValidationFailure(f"The {hm_type} type is only supported for pools of type UDP/SCTP.")
    raise ValidationFailure(
        f"The associated pool protocol is {pool_protocol}, so only a "
        "UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported."
    )


def check_udp_connect_delay(hm_type: str, delay: int, minimum: int) -> None:
    """``minimum``: the operator's ``api.udp_connect_min_interval_health_monitor``."""
    if hm_type == HealthMonitorType.UDP_CONNECT.value and delay < minimum:
        raise ValidationFailure(
            f"The request delay value {delay} should be larger than {minimum} "
            f"for {hm_type} health monitor type."
        )


def _not_for_type(field: str, hm_type: str) -> InvalidInput:
    return InvalidInput(f"{field} is not a valid option for health monitors of type {hm_type}")


def http_fields_on_create(hm_type: str, values: Mapping[str, str | None]) -> dict[str, str | None]:
    """The stored HTTP fields: defaults for HTTP(S); none for other types (null tolerated)."""
    if hm_type in HTTP_TYPES:
        return {name: values.get(name) or HTTP_DEFAULTS[name] for name in HTTP_FIELDS}
    for name in HTTP_FIELDS:
        if values.get(name):
            raise _not_for_type(name, hm_type)
    return dict.fromkeys(HTTP_FIELDS)


def check_http_fields_on_update(hm_type: str, sent: Iterable[str]) -> None:
    """On PUT a non-HTTP monitor refuses the HTTP fields outright, even as null."""
    if hm_type in HTTP_TYPES:
        return
    for name in HTTP_FIELDS:
        if name in sent:
            raise _not_for_type(name, hm_type)


def check_domain_name(domain_name: str | None, http_version: float | None) -> None:
    """A domain name is sent as an HTTP/1.1 Host header, so it needs that version."""
    if not domain_name:
        return
    if http_version is None:
        raise ValidationFailure("'http_version' must be specified when 'domain_name' is provided.")
    if http_version < 1.1:
        raise InvalidInput(
            f"http_version {http_version} is not a valid option for health monitors HTTP 1.1 "
            "domain name health check"
        )


def check_required_on_update(values: Mapping[str, object]) -> None:
    """``delay``, ``timeout`` and ``max_retries`` cannot be reset: null is refused."""
    for name in ("delay", "timeout", "max_retries"):
        if name in values and values[name] is None:
            raise InvalidInput(f"None is not a valid option for {name}")
