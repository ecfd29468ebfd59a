"""Request schemas of listeners: standalone POST/PUT and the graph-create shape.

Optional fields with a default accept JSON ``null`` as "use the default" (Octavia treats
null like an omitted attribute on create; on PUT null resets to the default). Defaults are
applied by the listener builder, not here, so a PUT can tell "sent null" from "not sent"
through ``given()``. Whether fields make sense together (TLS, headers, CIDRs vs the VIP)
is ``lbaas.api.validation.listener``'s job.

A new optional listener field goes into ``ListenerOptions`` (or one of its groups) and
nowhere else in this package: create and update both take it from there.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from lbaas.api.schemas.groups import (
    Described,
    EnabledChange,
    EnabledOnCreate,
    GivenId,
    ProjectOnCreate,
    TlsProtocols,
)
from lbaas.api.schemas.l7policy import L7PolicyNested
from lbaas.api.schemas.types import IPV4_PATTERN, ContainerRef, NullFalse, Port, Schema, Uuid
from lbaas.model.enums import ClientAuthentication, ListenerProtocol
from lbaas.render.haproxy.inputs import plain_cidr

MAX_INT = 2147483647


def _cidr(value: str) -> str:
    # The data plane's rule: no IPv6 zone (``fe80::1%lo x/128`` parses in Python).
    cidr = plain_cidr(value)
    if cidr is None:
        raise PydanticCustomError("cidr_format", "Value should be IPv4 or IPv6 CIDR format")
    return cidr


ConnectionLimit = Annotated[int, Field(ge=-1, le=MAX_INT)]
TimeoutMs = Annotated[int, Field(ge=0, le=2073600000)]
HeaderValue = Annotated[str, Field(max_length=255)]
# For the OpenAPI document: IPv4 networks, a part of what ``_cidr`` accepts (IPv6 networks
# and bare addresses too), since no pattern short of pages says "an IPv6 network".
_CIDR_DOC = {"pattern": rf"^{IPV4_PATTERN}/(?:3[0-2]|[12]?[0-9])$"}
Cidr = Annotated[str, AfterValidator(_cidr), Field(json_schema_extra=_CIDR_DOC)]
Ciphers = Annotated[str, Field(max_length=2048)]
MaxAge = Annotated[int, Field(ge=0, le=MAX_INT)]


class ListenerTimeouts(Schema):
    """The four HAProxy timeouts a listener sets, in milliseconds."""

    timeout_client_data: TimeoutMs | None = None
    timeout_member_connect: TimeoutMs | None = None
    timeout_member_data: TimeoutMs | None = None
    timeout_tcp_inspect: TimeoutMs | None = None


class ListenerTls(TlsProtocols):
    """TLS termination: certificates, client authentication, protocol options, HSTS age."""

    default_tls_container_ref: ContainerRef | None = None
    sni_container_refs: list[ContainerRef] | None = None
    client_ca_tls_container_ref: ContainerRef | None = None
    client_authentication: ClientAuthentication | None = None
    client_crl_container_ref: ContainerRef | None = None
    tls_ciphers: Ciphers | None = None
    hsts_max_age: MaxAge | None = None


class ListenerOptions(Described, ListenerTimeouts, ListenerTls):
    """Fields both create and update accept (all optional)."""

    connection_limit: ConnectionLimit | None = None
    default_pool_id: Uuid | None = None
    insert_headers: dict[str, HeaderValue] | None = None
    allowed_cidrs: list[Cidr] | None = None


class ListenerCommon(ListenerOptions, EnabledOnCreate):
    """A listener as created, standalone or nested in a graph-create load balancer."""

    protocol: ListenerProtocol
    protocol_port: Port
    hsts_include_subdomains: NullFalse = False
    hsts_preload: NullFalse = False


class ListenerCreate(ListenerCommon, ProjectOnCreate):
    loadbalancer_id: Uuid
    # Only meaningful inside a graph create; a standalone POST refuses non-empty values.
    default_pool: dict[str, Any] | None = None
    l7policies: list[dict[str, Any]] | None = None


class ListenerCreateBody(Schema):
    listener: ListenerCreate


class ListenerNested(ListenerCommon, GivenId):
    """Graph create: ``default_pool`` is a pool definition or ``{"name": …}`` reference;
    ``default_pool_id`` may name a pool of the same body by its given id."""

    default_pool: dict[str, Any] | None = None
    l7policies: list[L7PolicyNested] | None = None


# What a PUT may change: the options, plus the flags a create gives a default.
class ListenerUpdate(ListenerOptions, EnabledChange):
    hsts_include_subdomains: NullFalse | None = None
    hsts_preload: NullFalse | None = None


class ListenerUpdateBody(Schema):
    listener: ListenerUpdate
