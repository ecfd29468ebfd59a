"""Flavors, availability zones and their profiles as Octavia renders them.

These objects carry no project, status or timestamps in the API (the stored
``created_at`` only orders lists). A zone has no ``id``: its name is its key.
"""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import text
from lbaas.db.tables import (
    AvailabilityZoneProfileRow,
    AvailabilityZoneRow,
    FlavorProfileRow,
    FlavorRow,
)


def flavor_view(row: FlavorRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": text(row.name),
        "description": text(row.description),
        "enabled": row.enabled,
        "flavor_profile_id": row.flavor_profile_id,
    }


def flavor_profile_view(row: FlavorProfileRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": text(row.name),
        "provider_name": row.provider_name,
        "flavor_data": row.flavor_data,
    }


def availability_zone_view(row: AvailabilityZoneRow) -> dict[str, Any]:
    return {
        "name": row.name,
        "description": text(row.description),
        "enabled": row.enabled,
        "availability_zone_profile_id": row.availability_zone_profile_id,
    }


def availability_zone_profile_view(row: AvailabilityZoneProfileRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": text(row.name),
        "provider_name": row.provider_name,
        "availability_zone_data": row.availability_zone_data,
    }


def render_flavors(_session: object, rows: list[FlavorRow]) -> list[dict[str, Any]]:
    return [flavor_view(r) for r in rows]


def render_flavor_profiles(_session: object, rows: list[FlavorProfileRow]) -> list[dict[str, Any]]:
    return [flavor_profile_view(r) for r in rows]


def render_availability_zones(
    _session: object, rows: list[AvailabilityZoneRow]
) -> list[dict[str, Any]]:
    return [availability_zone_view(r) for r in rows]


def render_availability_zone_profiles(
    _session: object, rows: list[AvailabilityZoneProfileRow]
) -> list[dict[str, Any]]:
    return [availability_zone_profile_view(r) for r in rows]
