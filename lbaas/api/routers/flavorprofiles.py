"""``/v2/lbaas/flavorprofiles``: provider-specific data behind flavors (admin only).

The rules are those of every profile (``lbaas.api.profiles``); this module names the
flavor-profile variant and its routes.
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
from lbaas.api.schemas.catalog import FlavorProfileCreateBody, FlavorProfileUpdateBody
from lbaas.api.services import ApiServices
from lbaas.api.views.catalog import flavor_profile_view, render_flavor_profiles
from lbaas.db import queries
from lbaas.db.session import Session
from lbaas.db.tables import FlavorProfileRow, FlavorRow

router = APIRouter(route_class=JsonRoute, tags=["flavorprofiles"])


def _flavors_using(session: Session, profile_id: str) -> int:
    return queries.count_rows(session, FlavorRow, FlavorRow.flavor_profile_id == profile_id)


FLAVOR_PROFILE = ProfileKind(
    table=FlavorProfileRow,
    label="Flavor profile",
    data_field="flavor_data",
    wrapper="flavorprofile",
    collection="flavorprofiles",
    links_key="flavorprofile_links",
    keys=lambda caps: caps.flavor_keys,
    view=flavor_profile_view,
    render=render_flavor_profiles,
    users=_flavors_using,
)


add_profile_list_route(router, "/lbaas/flavorprofiles", "list_flavor_profiles", FLAVOR_PROFILE)


@router.post("/lbaas/flavorprofiles", status_code=201)
def create_flavor_profile(
    body: FlavorProfileCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    data = body.flavorprofile
    return create_profile(
        FLAVOR_PROFILE, services, ctx, data.name, data.provider_name, data.flavor_data
    )


@router.get("/lbaas/flavorprofiles/{profile_id}")
def show_flavor_profile(
    profile_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    return show_profile(FLAVOR_PROFILE, services, ctx, profile_id, fields)


@router.put("/lbaas/flavorprofiles/{profile_id}")
def update_flavor_profile(
    profile_id: str,
    body: FlavorProfileUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    return update_profile(FLAVOR_PROFILE, services, ctx, profile_id, body.flavorprofile)


@router.delete("/lbaas/flavorprofiles/{profile_id}", status_code=204)
def delete_flavor_profile(
    profile_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    return delete_profile(FLAVOR_PROFILE, services, ctx, profile_id)
