"""Request schemas of members: single create, update, and the batch update body.

``MemberSingleCreate`` is a member as it appears inside a pool of the single-call load
balancer create; ``MemberCreate`` adds the deprecated ``project_id``/``tenant_id`` the
standalone POST and the batch update accept (and ignore: members take their load
balancer's project). ``weight`` and ``backup`` sent as null mean their defaults.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from lbaas.api.schemas.types import (
    AdminState,
    IpAddress,
    Name,
    Port,
    ProjectRef,
    Schema,
    Tags,
    Uuid,
)

DEFAULT_WEIGHT = 1


def _null_is_default_weight(value: object) -> object:
    return DEFAULT_WEIGHT if value is None else value


def _null_is_false(value: object) -> object:
    return False if value is None else value


Weight = Annotated[int, Field(ge=0, le=256)]
NullFalse = Annotated[bool, BeforeValidator(_null_is_false)]


class MemberSingleCreate(Schema):
    name: Name | None = None
    admin_state_up: AdminState = True
    address: IpAddress
    protocol_port: Port
    weight: Annotated[Weight, BeforeValidator(_null_is_default_weight)] = DEFAULT_WEIGHT
    backup: NullFalse = False
    subnet_id: Uuid | None = None
    monitor_address: IpAddress | None = None
    monitor_port: Port | None = None
    request_sriov: NullFalse = False
    tags: Tags | None = None


class MemberCreate(MemberSingleCreate):
    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None


class MemberCreateBody(Schema):
    member: MemberCreate


class MemberUpdate(Schema):
    name: Name | None = None
    admin_state_up: AdminState | None = None
    weight: Weight | None = None
    backup: bool | None = None
    monitor_address: IpAddress | None = None
    monitor_port: Port | None = None
    tags: Tags | None = None


class MemberUpdateBody(Schema):
    member: MemberUpdate


class MembersBatchBody(Schema):
    members: list[MemberCreate]
