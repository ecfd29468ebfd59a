"""``/v2/lbaas/availabilityzoneprofiles``: provider data behind availability zones.

Same rules as flavor profiles (admin only, enabled provider, data keys the provider
declares, frozen while in use), so the routes here only name the zone-profile variant of
``ProfileKind`` and delegate to the shared handlers in ``lbaas.api.profiles``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.responses import JSONResponse, Response

from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.profiles import (
    ProfileKind,
    add_profile_list_route,
    create_profile,
    delete_profile,
    show_profile,
    update_profile,
)
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import (
    AvailabilityZoneProfileCreateBody,
    AvailabilityZoneProfileUpdateBody,
)
from lbaas.api.services import ApiServices
from lbaas.api.views.catalog import (
    availability_zone_profile_view,
    render_availability_zone_profiles,
)
from lbaas.db import queries
from lbaas.db.session import Session
from lbaas.db.tables import AvailabilityZoneProfileRow, AvailabilityZoneRow

router = APIRouter(route_class=JsonRoute, tags=["availabilityzoneprofiles"])


def _zones_using(session: Session, profile_id: str) -> int:
    return queries.count_rows(
        session,
        AvailabilityZoneRow,
        AvailabilityZoneRow.availability_zone_profile_id == profile_id,
    )


ZONE_PROFILE = ProfileKind(
    table=AvailabilityZoneProfileRow,
    label="Availability Zone Profile",
    data_field="availability_zone_data",
    wrapper="availability_zone_profile",
    collection="availability_zone_profiles",
    links_key="availability_zone_profile_links",
    keys=lambda caps: caps.availability_zone_keys,
    view=availability_zone_profile_view,
    render=render_availability_zone_profiles,
    users=_zones_using,
)
PATH = "/lbaas/availabilityzoneprofiles"


add_profile_list_route(router, PATH, "list_zone_profiles", ZONE_PROFILE)


@router.post(PATH, status_code=201)
def create_zone_profile(
    body: AvailabilityZoneProfileCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    data = body.availability_zone_profile
    return create_profile(
        ZONE_PROFILE, services, ctx, data.name, data.provider_name, data.availability_zone_data
    )


@router.get(PATH + "/{profile_id}")
def show_zone_profile(
    profile_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    return show_profile(ZONE_PROFILE, services, ctx, profile_id, fields)


@router.put(PATH + "/{profile_id}")
def update_zone_profile(
    profile_id: str,
    body: AvailabilityZoneProfileUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    return update_profile(ZONE_PROFILE, services, ctx, profile_id, body.availability_zone_profile)


@router.delete(PATH + "/{profile_id}", status_code=204)
def delete_zone_profile(
    profile_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    return delete_profile(ZONE_PROFILE, services, ctx, profile_id)
