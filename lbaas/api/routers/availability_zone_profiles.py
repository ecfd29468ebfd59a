"""``/v2/lbaas/availabilityzoneprofiles``: provider data behind availability zones.

Same rules as flavor profiles (admin only, enabled provider, data keys the provider
declares, frozen while in use), so the routes here only name the zone-profile variant of
``ProfileKind`` and delegate to the shared handlers in ``lbaas.api.profiles``.
"""

from __future__ import annotations

from fastapi import APIRouter

from lbaas.api.profiles import ProfileKind, add_profile_routes
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import (
    AvailabilityZoneProfileCreateBody,
    AvailabilityZoneProfileUpdateBody,
)
from lbaas.api.views.catalog import availability_zone_profile_view
from lbaas.db import table_rows
from lbaas.db.session import Session
from lbaas.db.tables import AvailabilityZoneProfileRow, AvailabilityZoneRow

router = APIRouter(route_class=JsonRoute, tags=["availabilityzoneprofiles"])


def _zones_using(session: Session, profile_id: str) -> int:
    return table_rows.count_rows(
        session,
        AvailabilityZoneRow,
        AvailabilityZoneRow.availability_zone_profile_id == profile_id,
    )


ZONE_PROFILE = ProfileKind(
    table=AvailabilityZoneProfileRow,
    label="Availability Zone Profile",
    data_field="availability_zone_data",
    wrapper="availability_zone_profile",
    keys=lambda caps: caps.availability_zone_keys,
    view=availability_zone_profile_view,
    users=_zones_using,
)


add_profile_routes(
    router,
    "/lbaas/availabilityzoneprofiles",
    "zone_profile",
    ZONE_PROFILE,
    (AvailabilityZoneProfileCreateBody, AvailabilityZoneProfileUpdateBody),
)
