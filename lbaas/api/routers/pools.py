"""``/v2/lbaas/pools``: CRUD of pools (rows built and updated by ``builders.pool``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from lbaas.api.builders.pool import apply_pool_update, build_pool
from lbaas.api.lookups import find_live, get_loadbalancer, get_pool
from lbaas.api.quota import check_quota
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, tree_conditions
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.pool import PoolCreate, PoolCreateBody, PoolUpdate, PoolUpdateBody
from lbaas.api.views.pool import render_pool, render_pools
from lbaas.api.write_routes import add_create_route, add_delete_route, add_update_route
from lbaas.api.writes import TreeWrite
from lbaas.db.listing import derived_spec
from lbaas.db.loadbalancers import pool_repo
from lbaas.db.session import Session
from lbaas.db.tables import ListenerRow, PoolRow
from lbaas.errors import Conflict, NotFound, ValidationFailure
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule

router = APIRouter(route_class=JsonRoute, tags=["pools"])
SPEC = derived_spec(PoolRow, aliases={"tenant_id": "project_id"})
_LIVE_OF_CALLER = tree_conditions(SPEC)


def _conditions(session: Session, request: Request, ctx: RequestContext, _: Any) -> list[Any]:
    """``listener_id`` and ``healthmonitor_id`` are relations, not pool columns."""
    conditions = [*_LIVE_OF_CALLER(session, request, ctx, None)]
    listener_id = request.query_params.get("listener_id")
    if listener_id is not None:
        used = pool_repo.pools_used_by_listener(session, listener_id)
        conditions.append(PoolRow.id.in_(used))
    monitor_id = request.query_params.get("healthmonitor_id")
    if monitor_id is not None:
        monitored = pool_repo.pool_of_monitor(session, monitor_id)
        conditions.append(PoolRow.id.in_(monitored))
    return conditions


add_list_route(
    router,
    "/lbaas/pools",
    Listing(
        SPEC,
        render_pools,
        "pools",
        extra_allowed=frozenset({"listener_id", "healthmonitor_id"}),
    ),
    _conditions,
)


def _create(w: TreeWrite, ctx: RequestContext, data: PoolCreate) -> PoolRow:
    if data.loadbalancer_id is None and data.listener_id is None:
        raise ValidationFailure("Must provide at least one of: loadbalancer_id, listener_id")
    listener = None
    if data.listener_id is not None:
        listener = find_live(w.session, ListenerRow, data.listener_id, "Listener")
    lb_id = data.loadbalancer_id or (listener.loadbalancer_id if listener else "")
    get_loadbalancer(w.session, ctx, lb_id, Rule.WRITE)
    if listener is not None and listener.loadbalancer_id != lb_id:
        raise NotFound.of("Listener", listener.id)
    lb = w.lock_child(lb_id, *([listener] if listener is not None else []))
    check_quota(w.session, w.services.settings.quota, lb.project_id, "pool")
    row = build_pool(w.session, w.services, lb, data, w.now, listener=listener)
    w.changed(lb, update=[listener] if listener is not None else [])
    return row


add_create_route(router, "/lbaas/pools", "pool", PoolCreateBody, _create, render_pool)


_ITEM = "/lbaas/pools/{pool_id}"
add_show_route(router, _ITEM, "pool", get_pool, render_pool)


def _update(w: TreeWrite, ctx: RequestContext, pool_id: str, data: PoolUpdate) -> PoolRow:
    row = get_pool(w.session, ctx, pool_id, Rule.WRITE)
    lb = w.lock_child(row.loadbalancer_id, row)
    apply_pool_update(w.session, w.services, lb, row, data)
    listeners = pool_repo.listeners_using_pool(w.session, row.id)
    w.changed(lb, update=[*listeners, row])
    return row


def _delete(w: TreeWrite, ctx: RequestContext, pool_id: str) -> None:
    row = get_pool(w.session, ctx, pool_id, Rule.WRITE)
    lb = w.lock_child(row.loadbalancer_id, row)
    redirecting = pool_repo.policies_redirecting_to(w.session, row.id)
    if redirecting:
        first = min(redirecting, key=lambda p: (p.created_at, p.id))
        raise Conflict(f"Pool {row.id} is in use by L7 policy {first.id}")
    listeners = pool_repo.listeners_using_pool(w.session, row.id)
    members, monitors = pool_repo.members_and_monitors(w.session, row.id)
    w.changed(lb, update=listeners, delete=[row, *members, *monitors])


add_update_route(router, _ITEM, "pool", PoolUpdateBody, _update, render_pool)
add_delete_route(router, _ITEM, "pool", _delete)
