"""Every update schema is its create schema minus what cannot change, all optional.

The schemas declare each field once (see ``lbaas.api.schemas.groups``); these tests hold
the rule that makes that safe: a field added to a create schema either appears in the
update schema too or is named here as one a PUT cannot change, and a field both accept
without a create default has the same type and constraints in both.
"""

from __future__ import annotations

import pytest
from pydantic.fields import FieldInfo

from lbaas.api.schemas.catalog import (
    AvailabilityZoneCreate,
    AvailabilityZoneProfileCreate,
    AvailabilityZoneProfileUpdate,
    AvailabilityZoneUpdate,
    FlavorCreate,
    FlavorProfileCreate,
    FlavorProfileUpdate,
    FlavorUpdate,
)
from lbaas.api.schemas.healthmonitor import HealthMonitorCreate, HealthMonitorUpdate
from lbaas.api.schemas.l7policy import L7PolicyCreate, L7PolicyUpdate
from lbaas.api.schemas.l7rule import L7RuleCreate, L7RuleUpdate
from lbaas.api.schemas.listener import ListenerCreate, ListenerUpdate
from lbaas.api.schemas.loadbalancer import LoadBalancerCreate, LoadBalancerUpdate
from lbaas.api.schemas.member import MemberCreate, MemberUpdate
from lbaas.api.schemas.pool import (
    PoolCreate,
    PoolUpdate,
    SessionPersistenceCreate,
    SessionPersistenceUpdate,
)
from lbaas.api.schemas.types import Schema

PROJECT = {"project_id", "tenant_id", "id"}

# create schema, update schema, the create fields a PUT cannot send
PAIRS: list[tuple[type[Schema], type[Schema], set[str]]] = [
    (
        ListenerCreate,
        ListenerUpdate,
        {"protocol", "protocol_port", "loadbalancer_id", "default_pool", "l7policies", *PROJECT},
    ),
    (PoolCreate, PoolUpdate, {"protocol", "loadbalancer_id", "listener_id", *PROJECT}),
    (SessionPersistenceCreate, SessionPersistenceUpdate, set()),
    (HealthMonitorCreate, HealthMonitorUpdate, {"type", "pool_id", *PROJECT}),
    (
        MemberCreate,
        MemberUpdate,
        {"address", "protocol_port", "subnet_id", "request_sriov", *PROJECT},
    ),
    (L7PolicyCreate, L7PolicyUpdate, {"listener_id", "rules", *PROJECT}),
    (L7RuleCreate, L7RuleUpdate, PROJECT),
    (
        LoadBalancerCreate,
        LoadBalancerUpdate,
        {
            "vip_subnet_id",
            "vip_network_id",
            "vip_port_id",
            "vip_address",
            "additional_vips",
            "provider",
            "flavor_id",
            "availability_zone",
            "listeners",
            "pools",
            *PROJECT,
        },
    ),
    (FlavorCreate, FlavorUpdate, {"flavor_profile_id"}),
    (FlavorProfileCreate, FlavorProfileUpdate, set()),
    (AvailabilityZoneCreate, AvailabilityZoneUpdate, {"name", "availability_zone_profile_id"}),
    (AvailabilityZoneProfileCreate, AvailabilityZoneProfileUpdate, set()),
]
# Fields whose update shape differs on purpose: a PUT may omit the persistence type.
RESHAPED = {"session_persistence"}
IDS = [create.__name__ for create, _, _ in PAIRS]


def _optional_without_default(field: FieldInfo) -> bool:
    return not field.is_required() and field.default is None


@pytest.mark.parametrize(("create", "update", "fixed"), PAIRS, ids=IDS)
def test_update_takes_every_create_field_but_the_fixed_ones(
    create: type[Schema], update: type[Schema], fixed: set[str]
) -> None:
    assert fixed <= set(create.model_fields)
    assert set(update.model_fields) == set(create.model_fields) - fixed


@pytest.mark.parametrize(("create", "update", "fixed"), PAIRS, ids=IDS)
def test_every_update_field_is_optional(
    create: type[Schema], update: type[Schema], fixed: set[str]
) -> None:
    required = [n for n, f in update.model_fields.items() if not _optional_without_default(f)]
    assert required == []


@pytest.mark.parametrize(("create", "update", "fixed"), PAIRS, ids=IDS)
def test_a_field_without_create_default_is_the_same_in_update(
    create: type[Schema], update: type[Schema], fixed: set[str]
) -> None:
    plain = [n for n, f in create.model_fields.items() if _optional_without_default(f)]
    for name in set(plain) - fixed - RESHAPED:
        made, changed = create.model_fields[name], update.model_fields[name]
        assert (made.annotation, made.metadata) == (changed.annotation, changed.metadata), name


def test_an_unknown_field_in_an_update_is_refused_by_name() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        ListenerUpdate.model_validate({"protocol_port": 80})
    assert err.value.errors()[0]["type"] == "extra_forbidden"
    assert err.value.errors()[0]["loc"] == ("protocol_port",)
