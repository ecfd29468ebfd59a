"""Flavors and availability zones: one set of rules, two resources.

Both are entries an operator publishes for tenants to name when they create a load
balancer. Anyone who may read load balancers may read them; only admins write them. Each
points at a profile of its kind, which must exist. An entry that a load balancer which
still exists names cannot be deleted (it can be disabled, which stops new load balancers
from picking it). The rules are written once here, parameterised by an ``EntryKind``; the
two resource modules only name their variant. The kinds differ in their key: a flavor has
an ``id`` and a unique name it may change; a zone is keyed by its name, which never changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse, Response

from lbaas.api.deps import Call, get_call
from lbaas.api.lookups import get_catalog_row
from lbaas.api.read_routes import Conditions, Listing, add_list_route, add_show_route, path_id
from lbaas.api.routing import add_write_routes
from lbaas.api.schemas.catalog import reject_nulls
from lbaas.api.schemas.types import Schema
from lbaas.api.services import ApiServices
from lbaas.api.writes import utcnow
from lbaas.db import table_rows
from lbaas.db.listing import derived_spec
from lbaas.db.loadbalancers import loadbalancer_repo
from lbaas.db.session import Session
from lbaas.errors import Conflict, InvalidInput
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, require_admin, require_reader


@dataclass(frozen=True)
class EntryKind:
    """What differs between flavors and availability zones."""

    table: type[Any]
    key: str  # the primary key column: "id", or "name" when the name is the key
    label: str  # in messages: "<label> <key> not found."
    wrapper: str  # the request and response object's key; "<wrapper>s" lists them
    profile_field: str  # the column naming the entry's profile
    profile_table: type[Any]
    lb_column: str  # the load balancer column that names an entry of this kind
    view: Callable[[Any], dict[str, Any]]
    listed: Conditions  # which rows the list shows

    @property
    def renamable(self) -> bool:
        return self.key != "name"

    def render(self, _: Session, rows: list[Any]) -> list[dict[str, Any]]:
        return [self.view(row) for row in rows]

    def get(self, session: Session, key: str, *, lock: bool = False) -> Any:
        return get_catalog_row(session, self.table, self.label, key, lock=lock)


def add_entry_routes(
    router: APIRouter,
    path: str,
    noun: str,
    kind: EntryKind,
    bodies: tuple[type[Schema], type[Schema]],
) -> None:
    """Register the five routes of ``kind`` under ``path`` (its item path ends in the
    key's parameter), named ``list_{noun}s``, ``create_{noun}``, ``show_{noun}``,
    ``update_{noun}`` and ``delete_{noun}``; ``bodies`` are the create and update bodies."""
    collection, item = path.rsplit("/", 1)[0], path
    spec = derived_spec(kind.table, exclude={"created_at"}, tag_capable=False)
    listing = Listing(spec, kind.render, f"{kind.wrapper}s")
    add_list_route(
        router, collection, listing, kind.listed, name=f"list_{noun}s", guard=require_reader
    )

    def visible(session: Session, ctx: RequestContext, key: str, _: Rule) -> Any:
        require_reader(ctx)
        return kind.get(session, key)

    show_name = f"show_{noun}"
    add_show_route(router, item, kind.wrapper, visible, lambda _, r: kind.view(r), name=show_name)
    key_of = path_id(item)

    def create(body: Any, call: Call = Depends(get_call)) -> JSONResponse:
        return create_entry(kind, *call, getattr(body, kind.wrapper))

    def update(
        body: Any, key: str = Depends(key_of), call: Call = Depends(get_call)
    ) -> dict[str, Any]:
        return update_entry(kind, *call, key, getattr(body, kind.wrapper))

    def delete(key: str = Depends(key_of), call: Call = Depends(get_call)) -> Response:
        return delete_entry(kind, *call, key)

    add_write_routes(router, noun, collection, item, (create, update, delete), bodies)


def _require_unique_name(
    kind: EntryKind, session: Session, name: str, own_key: str | None = None
) -> None:
    table = kind.table
    if table_rows.count_rows(
        session, table, table.name == name, getattr(table, kind.key) != own_key
    ):
        raise Conflict(f"A {kind.label.lower()} of {name} already exists.")


def create_entry(
    kind: EntryKind, services: ApiServices, ctx: RequestContext, data: Any
) -> JSONResponse:
    require_admin(ctx)
    with services.database.write() as session:
        _require_unique_name(kind, session, data.name)
        profile_id = getattr(data, kind.profile_field)
        if session.get(kind.profile_table, profile_id) is None:
            raise InvalidInput(f"{profile_id} is not a valid option for {kind.profile_field}")
        row = kind.table(
            name=data.name,
            description=data.description,
            enabled=data.enabled,
            created_at=utcnow(),
            **{kind.profile_field: profile_id},
        )
        if kind.key == "id":
            row.id = str(uuid.uuid4())
        session.add(row)
        session.flush()
        view = kind.view(row)
    return JSONResponse({kind.wrapper: view}, status_code=201)


def update_entry(
    kind: EntryKind, services: ApiServices, ctx: RequestContext, key: str, data: Any
) -> dict[str, Any]:
    """Describe, enable or disable; rename too when the name is not the key."""
    require_admin(ctx)
    with services.database.write() as session:
        row = kind.get(session, key, lock=True)
        reject_nulls(data, *(("name", "enabled") if kind.renamable else ("enabled",)))
        if kind.renamable and data.name is not None and data.name != row.name:
            _require_unique_name(kind, session, data.name, getattr(row, kind.key))
            row.name = data.name
        if data.given("description"):
            row.description = data.description
        if data.enabled is not None:
            row.enabled = data.enabled
        session.flush()
        view = kind.view(row)
    return {kind.wrapper: view}


def delete_entry(kind: EntryKind, services: ApiServices, ctx: RequestContext, key: str) -> Response:
    require_admin(ctx)
    with services.database.write() as session:
        row = kind.get(session, key, lock=True)
        own_key = getattr(row, kind.key)
        if loadbalancer_repo.count_live_loadbalancers(session, **{kind.lb_column: own_key}):
            raise Conflict(f"{kind.label} {own_key} is in use and cannot be modified.")
        session.delete(row)
    return Response(status_code=204)
