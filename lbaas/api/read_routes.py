"""Factories for the read endpoints: lists (parse, authorise, scope, page, render) and
single objects (look up, render, select ``fields``).

Every list handler of the API did the same five things with three differences: what it
checks before parsing (catalog lists authorise first), which conditions scope the rows
(live rows of the caller's projects, or the children of a parent looked up from the
path), and which extra query keys it accepts. ``add_list_route`` takes those differences
and registers the handler; the filters parsed as booleans and integers follow from the
column types of the ``ListSpec`` (``typed_filters``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import list_page, parse_list_params, select_fields
from lbaas.api.scoping import list_scope
from lbaas.api.services import ApiServices
from lbaas.db.listing import ListSpec, not_deleted, typed_filters
from lbaas.db.session import Session
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule

RenderMany = Callable[[Session, list[Any]], list[dict[str, Any]]]
# (session, request, caller, id from the path or None) -> SQL conditions
Conditions = Callable[[Session, Request, RequestContext, Any], Sequence[Any]]
# (session, caller, key from the path, rule) -> the row, or 404/403 (``lbaas.api.lookups``)
Lookup = Callable[[Session, RequestContext, Any, Rule], Any]
Render = Callable[[Session, Any], dict[str, Any]]


@dataclass(frozen=True)
class Listing:
    """What a list endpoint returns: rows of ``spec`` rendered under ``collection``, the
    page links under ``links_key`` (``<collection>_links`` unless given)."""

    spec: ListSpec
    render: RenderMany
    collection: str
    links: str | None = None
    extra_allowed: frozenset[str] = frozenset()

    @property
    def links_key(self) -> str:
        return self.links if self.links is not None else f"{self.collection}_links"


def live_rows_of_caller(spec: ListSpec, request: Request, ctx: RequestContext) -> list[Any]:
    """A top-level tree list: rows not DELETED, of the projects the caller may see."""
    table: Any = spec.table
    scope = list_scope(request, ctx, table.project_id)
    return [not_deleted(table), *scope]


def tree_conditions(spec: ListSpec) -> Conditions:
    """``live_rows_of_caller`` as the conditions of ``add_list_route``."""

    def conditions(session: Session, request: Request, ctx: RequestContext, _: Any) -> list[Any]:
        return live_rows_of_caller(spec, request, ctx)

    return conditions


def live_children(lookup: Lookup, rule: Rule, table: Any, parent_column: str) -> Conditions:
    """A sub-collection: the parent found by ``lookup`` with ``rule`` (404, then 403), and
    those of its children (``table.<parent_column>``) that are not DELETED."""

    def conditions(session: Session, _: Request, ctx: RequestContext, parent_id: Any) -> list[Any]:
        parent = lookup(session, ctx, parent_id, rule)
        return [
            getattr(table, parent_column) == parent.id,
            not_deleted(table),
        ]

    return conditions


def no_conditions(*_: Any) -> list[Any]:
    """Every row: catalog lists, whose readers see every entry."""
    return []


def _no_parent() -> None:
    return None


def path_id(path: str) -> Callable[..., str]:
    """A dependency that returns the last ``{parameter}`` of ``path``: declared under its
    own name, so the OpenAPI document shows it as the handler's path parameter."""
    name = re.findall(r"{(\w+)}", path)[-1]

    def ident(**values: str) -> str:
        return values[name]

    parameter = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=str)
    ident.__signature__ = inspect.Signature([parameter], return_annotation=str)  # type: ignore[attr-defined]
    return ident


def path_key(path: str) -> Callable[..., Any]:
    """A dependency that returns the key of the object ``path`` addresses: its one
    ``{parameter}``, or the tuple of all of them (parent first) for an object under a
    parent, ``/pools/{pool_id}/members/{member_id}``. Each is declared under its own name,
    so the OpenAPI document shows the handler's path parameters."""
    names = re.findall(r"{(\w+)}", path)
    if len(names) == 1:
        return path_id(path)

    def key(**values: str) -> tuple[str, ...]:
        return tuple(values[name] for name in names)

    parameters = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=str) for name in names
    ]
    key.__signature__ = inspect.Signature(parameters, return_annotation=tuple)  # type: ignore[attr-defined]
    return key


def add_list_route(
    router: APIRouter,
    path: str,
    listing: Listing,
    conditions: Conditions,
    *,
    name: str | None = None,
    guard: Callable[[RequestContext], None] | None = None,
) -> None:
    """Register ``GET path`` as ``name`` (``list_<collection>`` unless given). A parameter
    in ``path`` (the parent's id) is passed to ``conditions``; ``guard`` runs before
    parsing."""
    name = name or f"list_{listing.collection}"
    spec = listing.spec
    parent = path_id(path) if "{" in path else _no_parent
    bools, ints = typed_filters(spec)

    def list_endpoint(
        request: Request,
        services: ApiServices = Depends(get_services),
        ctx: RequestContext = Depends(get_context),
        parent_id: Any = Depends(parent),
    ) -> dict[str, Any]:
        if guard is not None:
            guard(ctx)
        params = parse_list_params(
            request,
            spec,
            services.settings.api.pagination_max_limit,
            bool_filters=bools,
            int_filters=ints,
            extra_allowed=listing.extra_allowed,
        )
        with services.database.read() as session:
            where = conditions(session, request, ctx, parent_id)
            return list_page(
                session,
                request,
                spec,
                params,
                listing.render,
                listing.collection,
                listing.links_key,
                services.settings.api.api_base_uri,
                where,
            )

    list_endpoint.__name__ = name
    router.add_api_route(path, list_endpoint, methods=["GET"], name=name)


def add_show_route(
    router: APIRouter,
    path: str,
    wrapper: str,
    lookup: Lookup,
    render: Render,
    *,
    name: str | None = None,
) -> None:
    """Register ``GET path`` as ``name`` (``show_<wrapper>`` unless given): ``{wrapper:
    the object}`` of the row that ``lookup`` finds by the key in the path (``path_key``)."""
    name = name or f"show_{wrapper}"
    ident = path_key(path)

    def show_endpoint(
        fields: list[str] = Query(default=[]),
        services: ApiServices = Depends(get_services),
        ctx: RequestContext = Depends(get_context),
        row_id: Any = Depends(ident),
    ) -> dict[str, Any]:
        with services.database.read() as session:
            row = lookup(session, ctx, row_id, Rule.READ)
            return {wrapper: select_fields(render(session, row), fields)}

    show_endpoint.__name__ = name
    router.add_api_route(path, show_endpoint, methods=["GET"], name=name)
