"""``/v2/lbaas/availabilityzones``: zones tenants may place load balancers in.

Zones are addressed by name (their primary key; there is no ``id``), so the name cannot
change and pagination markers are names. Otherwise the rules are those of flavors, written
once in ``lbaas.api.catalog_entries``: readable by anyone who may read load balancers,
written only by admins, and a zone named by a load balancer that still exists cannot be
deleted, only disabled.
"""

from __future__ import annotations

from fastapi import APIRouter

from lbaas.api.catalog_entries import EntryKind, add_entry_routes
from lbaas.api.read_routes import no_conditions
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import AvailabilityZoneCreateBody, AvailabilityZoneUpdateBody
from lbaas.api.views.catalog import availability_zone_view
from lbaas.db.tables import AvailabilityZoneProfileRow, AvailabilityZoneRow

router = APIRouter(route_class=JsonRoute, tags=["availabilityzones"])

ZONE = EntryKind(
    table=AvailabilityZoneRow,
    key="name",
    label="Availability Zone",
    wrapper="availability_zone",
    profile_field="availability_zone_profile_id",
    profile_table=AvailabilityZoneProfileRow,
    lb_column="availability_zone",
    view=availability_zone_view,
    listed=no_conditions,
)

add_entry_routes(
    router,
    "/lbaas/availabilityzones/{name}",
    "zone",
    ZONE,
    (AvailabilityZoneCreateBody, AvailabilityZoneUpdateBody),
)
