"""Request schemas of the operator catalogue: flavors, availability zones and their profiles.

These are global objects an operator manages (no project, no status, no tags). Fields an
object cannot change after creation (a flavor's profile, a zone's name and profile) are
simply absent from the update schemas, so sending them is the usual "Unknown attribute"
400. Fields that may change but never be empty (names, ``enabled``, profile data) are
refused with Octavia's "None is not a valid option" when a client sends ``null``.

A profile's data is a string holding a JSON object whose keys the provider declares;
``check_profile_data`` enforces that with the message Octavia gives.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Annotated

from pydantic import Field

from lbaas.api.schemas.types import Description, Name, ProviderName, Schema, Uuid
from lbaas.errors import InvalidInput

# A JSON object in a string; which keys it may hold depends on the provider named beside it
# (``GET /v2/lbaas/providers/{provider}/flavor_capabilities``), so no schema states them.
ProfileData = Annotated[
    str,
    Field(
        max_length=4096,
        json_schema_extra={"contentMediaType": "application/json", "examples": ["{}"]},
    ),
]


def reject_nulls(data: Schema, *names: str) -> None:
    """400 when a client sends ``null`` for a field that must keep a value."""
    for name in names:
        if data.given(name) and getattr(data, name) is None:
            raise InvalidInput(f"None is not a valid option for {name}")


def check_profile_data(raw: str, option: str, allowed_keys: Collection[str]) -> None:
    """The data must be a JSON object whose keys are all among ``allowed_keys``."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or any(key not in allowed_keys for key in parsed):
        raise InvalidInput(f"{raw} is not a valid option for {option}")


# -- what flavors and zones share, and what their profiles share ----------------------


class CatalogEntryCreate(Schema):
    """A flavor or zone as created: named, described, enabled unless told otherwise."""

    name: Name
    description: Description | None = None
    enabled: bool = True


class CatalogEntryChange(Schema):
    """What a PUT may change on a flavor and a zone alike (a zone keeps its name)."""

    description: Description | None = None
    enabled: bool | None = None


class ProfileCreate(Schema):
    """A profile as created: its name and the provider its data is for."""

    name: Name
    provider_name: ProviderName


class ProfileChange(Schema):
    """What a PUT may change on any profile besides its data."""

    name: Name | None = None
    provider_name: ProviderName | None = None


# -- flavors ---------------------------------------------------------------------------


class FlavorCreate(CatalogEntryCreate):
    flavor_profile_id: Uuid


class FlavorCreateBody(Schema):
    flavor: FlavorCreate


class FlavorUpdate(CatalogEntryChange):
    name: Name | None = None


class FlavorUpdateBody(Schema):
    flavor: FlavorUpdate


class FlavorProfileCreate(ProfileCreate):
    flavor_data: ProfileData


class FlavorProfileCreateBody(Schema):
    flavorprofile: FlavorProfileCreate


class FlavorProfileUpdate(ProfileChange):
    flavor_data: ProfileData | None = None


class FlavorProfileUpdateBody(Schema):
    flavorprofile: FlavorProfileUpdate


# -- availability zones ----------------------------------------------------------------


class AvailabilityZoneCreate(CatalogEntryCreate):
    availability_zone_profile_id: Uuid


class AvailabilityZoneCreateBody(Schema):
    availability_zone: AvailabilityZoneCreate


class AvailabilityZoneUpdate(CatalogEntryChange):
    pass


class AvailabilityZoneUpdateBody(Schema):
    availability_zone: AvailabilityZoneUpdate


class AvailabilityZoneProfileCreate(ProfileCreate):
    availability_zone_data: ProfileData


class AvailabilityZoneProfileCreateBody(Schema):
    availability_zone_profile: AvailabilityZoneProfileCreate


class AvailabilityZoneProfileUpdate(ProfileChange):
    availability_zone_data: ProfileData | None = None


class AvailabilityZoneProfileUpdateBody(Schema):
    availability_zone_profile: AvailabilityZoneProfileUpdate
