"""Request schemas of pools, and of the pools nested in a single-call load balancer create.

``PoolCreate`` is the standalone POST (``protocol`` and ``lb_algorithm`` mandatory, one of
``loadbalancer_id`` / ``listener_id`` checked by the router). ``PoolSingleCreate`` is a
pool inside the load balancer body: no ids, but a ``healthmonitor`` and ``members``; its
``protocol`` and ``lb_algorithm`` are optional because a bare ``{"name": …}`` is a
reference to a pool defined elsewhere in the same body. Session persistence has a POST
shape (``type`` mandatory) and a PUT shape (``type`` may be omitted to keep the stored one).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from lbaas.api.schemas.healthmonitor import HealthMonitorSingleCreate
from lbaas.api.schemas.member import MemberSingleCreate
from lbaas.api.schemas.types import (
    AdminState,
    Description,
    IpAddress,
    Name,
    ProjectRef,
    Schema,
    Tags,
    Uuid,
)
from lbaas.model.enums import LbAlgorithm, PersistenceType, PoolProtocol

_CIPHER_CHARS = re.compile(r"^[A-Za-z0-9\-+!:@=_.]*$")


def _ciphers(value: str) -> str:
    if not _CIPHER_CHARS.match(value):
        raise PydanticCustomError(
            "tls_ciphers", "Value should be an OpenSSL cipher string (A-Z a-z 0-9 -+!:@=_.)"
        )
    return value


def _null_is_false(value: object) -> object:
    return False if value is None else value


CertRef = Annotated[str, Field(max_length=255)]
Ciphers = Annotated[str, Field(max_length=2048), AfterValidator(_ciphers)]
TlsVersions = list[Annotated[str, Field(max_length=32)]]
AlpnProtocols = list[Annotated[str, Field(max_length=32)]]
NullFalse = Annotated[bool, BeforeValidator(_null_is_false)]
Timeout = Annotated[int, Field(ge=0, le=2147483647)]


class SessionPersistenceCreate(Schema):
    type: PersistenceType
    cookie_name: Annotated[str, Field(max_length=255)] | None = None
    persistence_timeout: Timeout | None = None
    persistence_granularity: IpAddress | None = None


class SessionPersistenceUpdate(Schema):
    type: PersistenceType | None = None
    cookie_name: Annotated[str, Field(max_length=255)] | None = None
    persistence_timeout: Timeout | None = None
    persistence_granularity: IpAddress | None = None


class PoolFields(Schema):
    """What every pool create shares (standalone and nested)."""

    name: Name | None = None
    description: Description | None = None
    admin_state_up: AdminState = True
    session_persistence: SessionPersistenceCreate | None = None
    tls_enabled: NullFalse = False
    tls_container_ref: CertRef | None = None
    ca_tls_container_ref: CertRef | None = None
    crl_container_ref: CertRef | None = None
    tls_ciphers: Ciphers | None = None
    tls_versions: TlsVersions | None = None
    alpn_protocols: AlpnProtocols | None = None
    tags: Tags | None = None


class PoolCreate(PoolFields):
    protocol: PoolProtocol
    lb_algorithm: LbAlgorithm
    loadbalancer_id: Uuid | None = None
    listener_id: Uuid | None = None
    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None


class PoolCreateBody(Schema):
    pool: PoolCreate


class PoolSingleCreate(PoolFields):
    protocol: PoolProtocol | None = None
    lb_algorithm: LbAlgorithm | None = None
    healthmonitor: HealthMonitorSingleCreate | None = None
    members: list[MemberSingleCreate] | None = None


class PoolUpdate(Schema):
    name: Name | None = None
    description: Description | None = None
    admin_state_up: AdminState | None = None
    lb_algorithm: LbAlgorithm | None = None
    session_persistence: SessionPersistenceUpdate | None = None
    tls_enabled: NullFalse | None = None
    tls_container_ref: CertRef | None = None
    ca_tls_container_ref: CertRef | None = None
    crl_container_ref: CertRef | None = None
    tls_ciphers: Ciphers | None = None
    tls_versions: TlsVersions | None = None
    alpn_protocols: AlpnProtocols | None = None
    tags: Tags | None = None


class PoolUpdateBody(Schema):
    pool: PoolUpdate
