"""``/v2/lbaas/availabilityzones``: zones tenants may place load balancers in.

Zones are addressed by name (their primary key; there is no ``id``), so the name cannot
change and pagination markers are names. Like flavors, zones are readable by anyone who
may read load balancers and written only by admins; a zone named by a load balancer that
still exists cannot be deleted, only disabled.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse, Response

from lbaas.api.context import RequestContext
from lbaas.api.deps import Call, get_call
from lbaas.api.lookups import NIL_UUID
from lbaas.api.policy import Rule, require_admin, require_reader
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, no_conditions
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import (
    AvailabilityZoneCreateBody,
    AvailabilityZoneUpdateBody,
    reject_nulls,
)
from lbaas.api.views.catalog import availability_zone_view, render_availability_zones
from lbaas.api.writes import utcnow
from lbaas.db import queries
from lbaas.db.listing import derived_spec
from lbaas.db.session import Session
from lbaas.db.tables import AvailabilityZoneProfileRow, AvailabilityZoneRow
from lbaas.errors import Conflict, InvalidInput, NotFound

router = APIRouter(route_class=JsonRoute, tags=["availabilityzones"])
PATH = "/lbaas/availabilityzones"
T = AvailabilityZoneRow
SPEC = derived_spec(T, exclude={"created_at"}, tag_capable=False)


def get_zone(session: Session, name: str, *, lock: bool = False) -> AvailabilityZoneRow:
    row = None if name == NIL_UUID else session.get(AvailabilityZoneRow, name, with_for_update=lock)
    if row is None:
        raise NotFound.of("Availability Zone", name)
    return row


add_list_route(
    router,
    PATH,
    "list_zones",
    Listing(SPEC, render_availability_zones, "availability_zones", "availability_zones_links"),
    no_conditions,
    guard=require_reader,
)


@router.post(PATH, status_code=201)
def create_zone(body: AvailabilityZoneCreateBody, call: Call = Depends(get_call)) -> JSONResponse:
    services, ctx = call
    require_admin(ctx)
    data = body.availability_zone
    with services.database.write() as session:
        if session.get(AvailabilityZoneRow, data.name) is not None:
            raise Conflict(f"A availability zone of {data.name} already exists.")
        profile_id = data.availability_zone_profile_id
        if session.get(AvailabilityZoneProfileRow, profile_id) is None:
            raise InvalidInput(
                f"{profile_id} is not a valid option for availability_zone_profile_id"
            )
        row = AvailabilityZoneRow(
            name=data.name,
            description=data.description,
            enabled=data.enabled,
            availability_zone_profile_id=profile_id,
            created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        view = availability_zone_view(row)
    return JSONResponse({"availability_zone": view}, status_code=201)


def _visible_zone(session: Session, ctx: RequestContext, ident: str, _: Rule) -> Any:
    require_reader(ctx)
    return get_zone(session, ident)


add_show_route(
    router,
    PATH + "/{name}",
    "show_zone",
    "availability_zone",
    _visible_zone,
    lambda _, row: availability_zone_view(row),
)


@router.put(PATH + "/{name}")
def update_zone(
    name: str, body: AvailabilityZoneUpdateBody, call: Call = Depends(get_call)
) -> dict[str, Any]:
    services, ctx = call
    require_admin(ctx)
    data = body.availability_zone
    with services.database.write() as session:
        row = get_zone(session, name, lock=True)
        reject_nulls(data, "enabled")
        if data.given("description"):
            row.description = data.description
        if data.enabled is not None:
            row.enabled = data.enabled
        session.flush()
        view = availability_zone_view(row)
    return {"availability_zone": view}


@router.delete(PATH + "/{name}", status_code=204)
def delete_zone(name: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    require_admin(ctx)
    with services.database.write() as session:
        row = get_zone(session, name, lock=True)
        if queries.count_live_loadbalancers(session, availability_zone=row.name):
            raise Conflict(f"Availability Zone {row.name} is in use and cannot be modified.")
        session.delete(row)
    return Response(status_code=204)
