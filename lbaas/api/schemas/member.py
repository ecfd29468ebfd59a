"""Request schemas of members: single create, update, and the batch update body.

``MemberSingleCreate`` is a member as it appears inside a pool of the single-call load
balancer create; ``MemberCreate`` adds the deprecated ``project_id``/``tenant_id`` the
standalone POST and the batch update accept (and ignore: members take their load
balancer's project). ``weight`` and ``backup`` sent as null mean their defaults.
A new optional member field goes into ``MemberOptions``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from lbaas.api.schemas.groups import (
    EnabledChange,
    EnabledOnCreate,
    GivenId,
    Named,
    ProjectOnCreate,
    Tagged,
)
from lbaas.api.schemas.types import IpAddress, NullFalse, Port, Schema, Uuid

DEFAULT_WEIGHT = 1


def _null_is_default_weight(value: object) -> object:
    return DEFAULT_WEIGHT if value is None else value


Weight = Annotated[int, Field(ge=0, le=256)]


class MemberOptions(Named, Tagged):
    """Fields both create and update accept (all optional)."""

    monitor_address: IpAddress | None = None
    monitor_port: Port | None = None


class MemberSingleCreate(MemberOptions, EnabledOnCreate, GivenId):
    address: IpAddress
    protocol_port: Port
    weight: Annotated[Weight, BeforeValidator(_null_is_default_weight)] = DEFAULT_WEIGHT
    backup: NullFalse = False
    subnet_id: Uuid | None = None
    request_sriov: NullFalse = False


class MemberCreate(MemberSingleCreate, ProjectOnCreate):
    pass


class MemberCreateBody(Schema):
    member: MemberCreate


# What a PUT may change: the options, plus what a create gives a default.
class MemberUpdate(MemberOptions, EnabledChange):
    weight: Weight | None = None
    backup: bool | None = None


class MemberUpdateBody(Schema):
    member: MemberUpdate


class MembersBatchBody(Schema):
    members: list[MemberCreate]
