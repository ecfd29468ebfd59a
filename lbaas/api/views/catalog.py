"""Flavors, availability zones and their profiles as Octavia renders them.

These objects carry no project, status or timestamps in the API (the stored
``created_at`` only orders lists): each is its columns as stored, but for names and
descriptions, which are rendered as text. A zone has no ``id``: its name is its key.
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

_TEXT = frozenset({"name", "description"})


def _columns(row: Any, *names: str) -> dict[str, Any]:
    return {
        name: text(getattr(row, name)) if name in _TEXT else getattr(row, name) for name in names
    }


def flavor_view(row: FlavorRow) -> dict[str, Any]:
    return _columns(row, "id", "name", "description", "enabled", "flavor_profile_id")


def flavor_profile_view(row: FlavorProfileRow) -> dict[str, Any]:
    return _columns(row, "id", "name", "provider_name", "flavor_data")


def availability_zone_view(row: AvailabilityZoneRow) -> dict[str, Any]:
    return _columns(row, "name", "description", "enabled", "availability_zone_profile_id")


def availability_zone_profile_view(row: AvailabilityZoneProfileRow) -> dict[str, Any]:
    return _columns(row, "id", "name", "provider_name", "availability_zone_data")
