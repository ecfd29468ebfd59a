"""Flavor profiles and availability-zone profiles: one set of rules, two resources.

Both follow the same rules, so the rules are written once here, parameterised by a
``ProfileKind``, and the two resource modules only name their variant: the provider must
be enabled; the data is a JSON object (as a string of at most 4096 characters) whose keys
the provider declared in its capabilities; while anything uses the profile its provider
and data are frozen and it cannot be deleted, because changing them would silently change
every load balancer built from it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse, Response

from lbaas.api.deps import Call, get_call
from lbaas.api.lookups import get_catalog_row
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, no_conditions
from lbaas.api.routing import add_write_routes
from lbaas.api.schemas.catalog import check_profile_data, reject_nulls
from lbaas.api.schemas.types import Schema
from lbaas.api.services import ApiServices
from lbaas.api.writes import utcnow
from lbaas.db.listing import ListSpec, derived_spec
from lbaas.db.session import Session
from lbaas.errors import Conflict, InvalidInput
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, require_admin
from lbaas.providers.base import ProviderCapabilities


@dataclass(frozen=True)
class ProfileKind:
    """What differs between flavor profiles and availability-zone profiles."""

    table: type[Any]
    label: str  # in messages: "<label> <id> not found."
    data_field: str
    wrapper: str  # the request and response object's key; "<wrapper>s" lists them
    keys: Callable[[ProviderCapabilities], Mapping[str, str]]
    view: Callable[[Any], dict[str, Any]]
    users: Callable[[Session, str], int]  # how many objects use the profile

    def render(self, _: Session, rows: list[Any]) -> list[dict[str, Any]]:
        return [self.view(row) for row in rows]

    def spec(self) -> ListSpec:
        return derived_spec(self.table, exclude={"created_at"}, tag_capable=False)


def add_profile_routes(
    router: APIRouter,
    path: str,
    noun: str,
    kind: ProfileKind,
    bodies: tuple[type[Schema], type[Schema]],
) -> None:
    """Register the five profile routes under ``path``, named ``list_{noun}s``,
    ``create_{noun}``, ``show_{noun}``, ``update_{noun}`` and ``delete_{noun}``.
    ``bodies`` are the create and update request bodies (``{kind.wrapper: {...}}``)."""
    listing = Listing(kind.spec(), kind.render, f"{kind.wrapper}s", f"{kind.wrapper}_links")
    add_list_route(router, path, listing, no_conditions, name=f"list_{noun}s", guard=require_admin)
    item = path + "/{profile_id}"

    def visible(session: Session, ctx: RequestContext, profile_id: str, _: Rule) -> Any:
        require_admin(ctx)
        return get_profile(kind, session, profile_id)

    show_name = f"show_{noun}"
    add_show_route(router, item, kind.wrapper, visible, lambda _, r: kind.view(r), name=show_name)

    def create(body: Any, call: Call = Depends(get_call)) -> JSONResponse:
        data = getattr(body, kind.wrapper)
        raw = getattr(data, kind.data_field)
        return create_profile(kind, *call, data.name, data.provider_name, raw)

    def update(profile_id: str, body: Any, call: Call = Depends(get_call)) -> dict[str, Any]:
        return update_profile(kind, *call, profile_id, getattr(body, kind.wrapper))

    def delete(profile_id: str, call: Call = Depends(get_call)) -> Response:
        return delete_profile(kind, *call, profile_id)

    add_write_routes(router, noun, path, item, (create, update, delete), bodies)


def get_profile(kind: ProfileKind, session: Session, profile_id: str, *, lock: bool = False) -> Any:
    return get_catalog_row(session, kind.table, kind.label, profile_id, lock=lock)


def _validate(kind: ProfileKind, services: ApiServices, provider_name: str, raw: str) -> None:
    if services.providers.resolve(provider_name) is None:
        raise InvalidInput(f"Provider '{provider_name}' is not enabled.")
    capabilities = services.providers.capabilities(provider_name)
    check_profile_data(raw, kind.data_field, kind.keys(capabilities))
    data = json.loads(raw)
    unhonoured = sorted(set(data) & capabilities.unhonoured_keys)
    refused_values = [
        key
        for key, allowed in sorted(capabilities.profile_values.items())
        if key in data and (not isinstance(data[key], str) or data[key] not in allowed)
    ]
    unhonoured += [f"{key}={data[key]!r}" for key in refused_values]
    not_boolean = sorted(
        k for k in capabilities.boolean_keys if k in data and not isinstance(data[k], bool)
    )
    if not_boolean:
        raise InvalidInput(f"{', '.join(not_boolean)} must be true or false.")
    networks = data.get("valid_vip_networks", [])
    if not isinstance(networks, list) or not all(isinstance(n, str) for n in networks):
        raise InvalidInput("valid_vip_networks must be a list of network IDs.")
    if unhonoured:
        notes = [capabilities.profile_value_notes.get(key) for key in refused_values]
        why = "; ".join(note for note in notes if note) or "not honoured yet"
        raise InvalidInput(
            f"Provider '{provider_name}' does not support a requested option: "
            f"{', '.join(unhonoured)} ({why})"
        )


def create_profile(
    kind: ProfileKind,
    services: ApiServices,
    ctx: RequestContext,
    name: str,
    provider_name: str,
    raw: str,
) -> JSONResponse:
    require_admin(ctx)
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


def _sent(data: Schema, name: str, stored: str) -> str:
    """The value sent for ``name`` (nulls are refused earlier), else the stored one."""
    return str(getattr(data, name)) if data.given(name) else stored


def update_profile(
    kind: ProfileKind, services: ApiServices, ctx: RequestContext, profile_id: str, data: Schema
) -> dict[str, Any]:
    """Rename freely; change provider or data only while nothing uses the profile."""
    require_admin(ctx)
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
    require_admin(ctx)
    with services.database.write() as session:
        row = get_profile(kind, session, profile_id, lock=True)
        if kind.users(session, row.id):
            raise Conflict(f"{kind.label} {row.id} is in use and cannot be modified.")
        session.delete(row)
    return Response(status_code=204)
