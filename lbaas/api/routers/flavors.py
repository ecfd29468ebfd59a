"""``/v2/lbaas/flavors``: named offerings an operator publishes for tenants to pick.

A flavor points at a flavor profile (provider + provider-specific data, admin only); the
flavor itself is what tenants see and name in ``flavor_id`` when they create a load
balancer. Anyone who may read load balancers may read flavors; only admins write them.
A flavor in use by a load balancer that still exists cannot be deleted (it can be
disabled, which stops new load balancers from picking it). The nil UUID is reserved by
Octavia as "no flavor" and is never found.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse, Response

from lbaas.api.context import RequestContext
from lbaas.api.deps import Call, get_call
from lbaas.api.lookups import NIL_UUID
from lbaas.api.policy import Rule, require_admin, require_reader
from lbaas.api.read_routes import Listing, add_list_route, add_show_route
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import FlavorCreateBody, FlavorUpdateBody, reject_nulls
from lbaas.api.views.catalog import flavor_view, render_flavors
from lbaas.api.writes import utcnow
from lbaas.db import queries
from lbaas.db.listing import derived_spec
from lbaas.db.session import Session
from lbaas.db.tables import FlavorProfileRow, FlavorRow
from lbaas.errors import Conflict, InvalidInput, NotFound

router = APIRouter(route_class=JsonRoute, tags=["flavors"])
T = FlavorRow
SPEC = derived_spec(T, exclude={"created_at"}, tag_capable=False)


def get_flavor(session: Session, flavor_id: str, *, lock: bool = False) -> FlavorRow:
    row = None if flavor_id == NIL_UUID else session.get(FlavorRow, flavor_id, with_for_update=lock)
    if row is None:
        raise NotFound.of("Flavor", flavor_id)
    return row


def _require_unique_name(session: Session, name: str, own_id: str | None = None) -> None:
    if queries.count_rows(session, FlavorRow, FlavorRow.name == name, FlavorRow.id != own_id):
        raise Conflict(f"A flavor of {name} already exists.")


def _real_flavors(*_: Any) -> list[Any]:
    return [T.id != NIL_UUID]


add_list_route(
    router,
    "/lbaas/flavors",
    "list_flavors",
    Listing(SPEC, render_flavors, "flavors", "flavors_links"),
    _real_flavors,
    guard=require_reader,
)


@router.post("/lbaas/flavors", status_code=201)
def create_flavor(body: FlavorCreateBody, call: Call = Depends(get_call)) -> JSONResponse:
    services, ctx = call
    require_admin(ctx)
    data = body.flavor
    with services.database.write() as session:
        _require_unique_name(session, data.name)
        if session.get(FlavorProfileRow, data.flavor_profile_id) is None:
            raise InvalidInput(
                f"{data.flavor_profile_id} is not a valid option for flavor_profile_id"
            )
        row = FlavorRow(
            id=str(uuid.uuid4()),
            name=data.name,
            description=data.description,
            enabled=data.enabled,
            flavor_profile_id=data.flavor_profile_id,
            created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        view = flavor_view(row)
    return JSONResponse({"flavor": view}, status_code=201)


def _visible_flavor(session: Session, ctx: RequestContext, ident: str, _: Rule) -> Any:
    require_reader(ctx)
    return get_flavor(session, ident)


add_show_route(
    router,
    "/lbaas/flavors/{flavor_id}",
    "show_flavor",
    "flavor",
    _visible_flavor,
    lambda _, row: flavor_view(row),
)


@router.put("/lbaas/flavors/{flavor_id}")
def update_flavor(
    flavor_id: str, body: FlavorUpdateBody, call: Call = Depends(get_call)
) -> dict[str, Any]:
    services, ctx = call
    require_admin(ctx)
    data = body.flavor
    with services.database.write() as session:
        row = get_flavor(session, flavor_id, lock=True)
        reject_nulls(data, "name", "enabled")
        if data.name is not None and data.name != row.name:
            _require_unique_name(session, data.name, row.id)
            row.name = data.name
        if data.given("description"):
            row.description = data.description
        if data.enabled is not None:
            row.enabled = data.enabled
        session.flush()
        view = flavor_view(row)
    return {"flavor": view}


@router.delete("/lbaas/flavors/{flavor_id}", status_code=204)
def delete_flavor(flavor_id: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    require_admin(ctx)
    with services.database.write() as session:
        row = get_flavor(session, flavor_id, lock=True)
        if queries.count_live_loadbalancers(session, flavor_id=row.id):
            raise Conflict(f"Flavor {row.id} is in use and cannot be modified.")
        session.delete(row)
    return Response(status_code=204)
