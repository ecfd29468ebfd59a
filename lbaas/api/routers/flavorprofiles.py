"""``/v2/lbaas/flavorprofiles``: provider-specific data behind flavors (admin only).

Flavor profiles and availability-zone profiles follow the same rules, so the rules are
written once here, parameterised by a ``ProfileKind``, and the zone-profile router reuses
them: the provider must be enabled; the data is a JSON object (as a string of at most
4096 characters) whose keys the provider declared in its capabilities; while anything
uses the profile its provider and data are frozen and it cannot be deleted, because
changing them would silently change every load balancer built from it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import list_page, parse_list_params, select_fields
from lbaas.api.policy import Rule, authorize
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import (
    FlavorProfileCreateBody,
    FlavorProfileUpdateBody,
    check_profile_data,
    reject_nulls,
)
from lbaas.api.schemas.types import Schema
from lbaas.api.services import ApiServices
from lbaas.api.views.catalog import flavor_profile_view, render_flavor_profiles
from lbaas.api.writes import utcnow
from lbaas.db import queries
from lbaas.db.listing import ListSpec
from lbaas.db.session import Session
from lbaas.db.tables import FlavorProfileRow, FlavorRow
from lbaas.errors import Conflict, InvalidInput, NotFound
from lbaas.providers.base import ProviderCapabilities

router = APIRouter(route_class=JsonRoute, tags=["flavorprofiles"])
NIL_UUID = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True)
class ProfileKind:
    """What differs between flavor profiles and availability-zone profiles."""

    table: type[Any]
    label: str  # in messages: "<label> <id> not found."
    data_field: str
    wrapper: str
    collection: str
    links_key: str
    keys: Callable[[ProviderCapabilities], Mapping[str, str]]
    view: Callable[[Any], dict[str, Any]]
    render: Callable[[Session, list[Any]], list[dict[str, Any]]]
    users: Callable[[Session, str], int]  # how many objects use the profile

    def spec(self) -> ListSpec:
        t = self.table
        columns = ("id", "name", "provider_name", self.data_field)
        return ListSpec(
            table=t,
            columns={c: getattr(t, c) for c in columns},
            id_column=t.id,
            created_column=t.created_at,
            tag_capable=False,
        )


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


def get_profile(kind: ProfileKind, session: Session, profile_id: str, *, lock: bool = False) -> Any:
    row = (
        None
        if profile_id == NIL_UUID
        else session.get(kind.table, profile_id, with_for_update=lock)
    )
    if row is None:
        raise NotFound.of(kind.label, profile_id)
    return row


def _validate(kind: ProfileKind, services: ApiServices, provider_name: str, raw: str) -> None:
    if services.providers.resolve(provider_name) is None:
        raise InvalidInput(f"Provider '{provider_name}' is not enabled.")
    check_profile_data(
        raw, kind.data_field, kind.keys(services.providers.capabilities(provider_name))
    )


def list_profiles(
    kind: ProfileKind, request: Request, services: ApiServices, ctx: RequestContext
) -> dict[str, Any]:
    authorize(ctx, Rule.ADMIN, ctx.project_id)
    spec = kind.spec()
    params = parse_list_params(request, spec, services.settings.api.pagination_max_limit)
    with services.database.read() as session:
        return list_page(
            session,
            request,
            spec,
            params,
            kind.render,
            kind.collection,
            kind.links_key,
            services.settings.api.api_base_uri,
        )


def create_profile(
    kind: ProfileKind,
    services: ApiServices,
    ctx: RequestContext,
    name: str,
    provider_name: str,
    raw: str,
) -> JSONResponse:
    authorize(ctx, Rule.ADMIN, ctx.project_id)
    _validate(kind, services, provider_name, raw)
    with services.database.write() as session:
        row = kind.table(
            id=str(uuid.uuid4()),
            name=name,
            provider_name=provider_name,
            created_at=utcnow(),
            **{kind.data_field: raw},
        )
        session.add(row)
        session.flush()
        view = kind.view(row)
    return JSONResponse({kind.wrapper: view}, status_code=201)


def show_profile(
    kind: ProfileKind,
    services: ApiServices,
    ctx: RequestContext,
    profile_id: str,
    fields: list[str],
) -> dict[str, Any]:
    authorize(ctx, Rule.ADMIN, ctx.project_id)
    with services.database.read() as session:
        view = kind.view(get_profile(kind, session, profile_id))
    return {kind.wrapper: select_fields(view, fields)}


def _sent(data: Schema, name: str, stored: str) -> str:
    """The value sent for ``name`` (nulls are refused earlier), else the stored one."""
    return str(getattr(data, name)) if data.given(name) else stored


def update_profile(
    kind: ProfileKind, services: ApiServices, ctx: RequestContext, profile_id: str, data: Schema
) -> dict[str, Any]:
    """Rename freely; change provider or data only while nothing uses the profile."""
    authorize(ctx, Rule.ADMIN, ctx.project_id)
    with services.database.write() as session:
        row = get_profile(kind, session, profile_id, lock=True)
        reject_nulls(data, "name", "provider_name", kind.data_field)
        provider = _sent(data, "provider_name", row.provider_name)
        raw = _sent(data, kind.data_field, getattr(row, kind.data_field))
        if (provider, raw) != (row.provider_name, getattr(row, kind.data_field)):
            if kind.users(session, row.id):
                raise Conflict(f"{kind.label} {row.id} is in use and cannot be modified.")
            _validate(kind, services, provider, raw)
            row.provider_name = provider
            setattr(row, kind.data_field, raw)
        row.name = _sent(data, "name", row.name)
        session.flush()
        view = kind.view(row)
    return {kind.wrapper: view}


def delete_profile(
    kind: ProfileKind, services: ApiServices, ctx: RequestContext, profile_id: str
) -> Response:
    authorize(ctx, Rule.ADMIN, ctx.project_id)
    with services.database.write() as session:
        row = get_profile(kind, session, profile_id, lock=True)
        if kind.users(session, row.id):
            raise Conflict(f"{kind.label} {row.id} is in use and cannot be modified.")
        session.delete(row)
    return Response(status_code=204)


# -- the flavor-profile routes -----------------------------------------------------------


@router.get("/lbaas/flavorprofiles")
def list_flavor_profiles(
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    return list_profiles(FLAVOR_PROFILE, request, services, ctx)


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
