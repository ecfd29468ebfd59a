"""Request schemas of pools, and of the pools nested in a single-call load balancer create.

``PoolCreate`` is the standalone POST (``protocol`` and ``lb_algorithm`` mandatory, one of
``loadbalancer_id`` / ``listener_id`` checked by the router). ``PoolSingleCreate`` is a
pool inside the load balancer body: no parent ids (a given ``id`` may stand in for its
``name``), but a ``healthmonitor`` and ``members``; its
``protocol`` and ``lb_algorithm`` are optional because a bare ``{"name": …}`` is a
reference to a pool defined elsewhere in the same body. Session persistence has a POST
shape (``type`` mandatory) and a PUT shape (``type`` may be omitted to keep the stored one).
A new optional pool field goes into ``PoolOptions``: create and update take it from there.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from lbaas.api.schemas.groups import (
    Described,
    EnabledChange,
    EnabledOnCreate,
    GivenId,
    ProjectOnCreate,
    TlsProtocols,
)
from lbaas.api.schemas.healthmonitor import HealthMonitorSingleCreate
from lbaas.api.schemas.member import MemberSingleCreate
from lbaas.api.schemas.types import (
    ContainerRef,
    IpAddress,
    NullFalse,
    Schema,
    Uuid,
    given_one_of,
)
from lbaas.model.enums import LbAlgorithm, MemberDownPolicy, PersistenceType, PoolProtocol

_CIPHER_CHARS = re.compile(r"^[A-Za-z0-9\-+!:@=_.]*$")


def _ciphers(value: str) -> str:
    if not _CIPHER_CHARS.match(value):
        raise PydanticCustomError(
            "tls_ciphers", "Value should be an OpenSSL cipher string (A-Z a-z 0-9 -+!:@=_.)"
        )
    return value


Ciphers = Annotated[
    str,
    Field(max_length=2048, json_schema_extra={"pattern": _CIPHER_CHARS.pattern}),
    AfterValidator(_ciphers),
]
Timeout = Annotated[int, Field(ge=0, le=2147483647)]


class SessionPersistenceOptions(Schema):
    """What a session persistence carries besides its type, on POST and PUT alike."""

    cookie_name: Annotated[str, Field(max_length=255)] | None = None
    persistence_timeout: Timeout | None = None
    persistence_granularity: IpAddress | None = None


class SessionPersistenceCreate(SessionPersistenceOptions):
    type: PersistenceType


class SessionPersistenceUpdate(SessionPersistenceOptions):
    type: PersistenceType | None = None


class PoolOptions(Described, TlsProtocols):
    """Fields both create and update accept (all optional): here, TLS towards members."""

    tls_container_ref: ContainerRef | None = None
    ca_tls_container_ref: ContainerRef | None = None
    crl_container_ref: ContainerRef | None = None
    tls_ciphers: Ciphers | None = None
    # lbaas extension: what a member's established connections do when it goes down
    # (null on create: keep; a provider refuses with 400 the values it cannot carry out).
    lbaas_member_down_policy: MemberDownPolicy | None = None


class PoolFields(PoolOptions, EnabledOnCreate):
    """What every pool create shares (standalone and nested)."""

    session_persistence: SessionPersistenceCreate | None = None
    tls_enabled: NullFalse = False


class PoolCreate(PoolFields, ProjectOnCreate):
    model_config = ConfigDict(json_schema_extra=given_one_of("loadbalancer_id", "listener_id"))

    protocol: PoolProtocol
    lb_algorithm: LbAlgorithm
    loadbalancer_id: Uuid | None = None
    listener_id: Uuid | None = None


class PoolCreateBody(Schema):
    pool: PoolCreate


class PoolSingleCreate(PoolFields, GivenId):
    protocol: PoolProtocol | None = None
    lb_algorithm: LbAlgorithm | None = None
    healthmonitor: HealthMonitorSingleCreate | None = None
    members: list[MemberSingleCreate] | None = None


# What a PUT may change: the options, plus what a create requires or gives a default.
class PoolUpdate(PoolOptions, EnabledChange):
    lb_algorithm: LbAlgorithm | None = None
    session_persistence: SessionPersistenceUpdate | None = None
    tls_enabled: NullFalse | None = None


class PoolUpdateBody(Schema):
    pool: PoolUpdate
