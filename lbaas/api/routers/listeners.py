"""``/v2/lbaas/listeners``: CRUD and per-listener statistics.

Every write follows ``lbaas.api.writes``: look the listener (or its load balancer) up
(404), authorise on the load balancer's project (403), lock the load balancer (409 unless
ACTIVE), validate, write, mark the load balancer PENDING_UPDATE and the listener
PENDING_*, and enqueue the converge job in the same transaction. Deleting a listener marks
its L7 policies and rules PENDING_DELETE too; the converge removes them with it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from lbaas.api.builders.listener import build_listener, update_listener
from lbaas.api.deps import Call, get_call
from lbaas.api.lookups import get_listener, get_loadbalancer
from lbaas.api.quota import check_quota
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, tree_conditions
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.listener import (
    ListenerCreate,
    ListenerCreateBody,
    ListenerUpdate,
    ListenerUpdateBody,
)
from lbaas.api.views.common import single
from lbaas.api.views.listener import render_listeners
from lbaas.api.write_routes import add_create_route, add_delete_route, add_update_route
from lbaas.api.writes import TreeWrite
from lbaas.db.health import stats_repo
from lbaas.db.listing import derived_spec
from lbaas.db.loadbalancers import l7_repo
from lbaas.db.tables import ListenerRow
from lbaas.errors import ValidationFailure
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule

router = APIRouter(route_class=JsonRoute, tags=["listeners"])
SPEC = derived_spec(ListenerRow, aliases={"tenant_id": "project_id"})
_ITEM = "/lbaas/listeners/{listener_id}"
_UPDATE = "update_listener_route"  # the route's name since its first version


_one = single(render_listeners)


add_list_route(
    router,
    "/lbaas/listeners",
    Listing(SPEC, render_listeners, "listeners"),
    tree_conditions(SPEC),
)


def _create(w: TreeWrite, ctx: RequestContext, data: ListenerCreate) -> ListenerRow:
    lb = get_loadbalancer(w.session, ctx, data.loadbalancer_id, Rule.WRITE)
    if data.default_pool or data.l7policies:
        raise ValidationFailure(
            "default_pool and l7policies can only be given when creating a fully "
            "populated load balancer."
        )
    lb = w.lock_child(lb.id)
    check_quota(w.session, w.services.settings.quota, lb.project_id, "listener")
    row = build_listener(w.session, w.services, lb, data, w.now)
    w.changed(lb)
    return row


add_create_route(router, "/lbaas/listeners", "listener", ListenerCreateBody, _create, _one)


add_show_route(router, _ITEM, "listener", get_listener, _one)


def _update(
    w: TreeWrite, ctx: RequestContext, listener_id: str, data: ListenerUpdate
) -> ListenerRow:
    row = get_listener(w.session, ctx, listener_id, Rule.WRITE)
    lb = w.lock_child(row.loadbalancer_id, row)
    update_listener(w.session, w.services, lb, row, data, w.now)
    w.changed(lb, update=[row])
    return row


def _delete(w: TreeWrite, ctx: RequestContext, listener_id: str) -> None:
    row = get_listener(w.session, ctx, listener_id, Rule.WRITE)
    lb = w.lock_child(row.loadbalancer_id)
    policies, rules = l7_repo.live_policies_and_rules(w.session, row.id)
    w.changed(lb, delete=[*rules, *policies, row])


add_update_route(router, _ITEM, "listener", ListenerUpdateBody, _update, _one, name=_UPDATE)
add_delete_route(router, _ITEM, "listener", _delete)


@router.get("/lbaas/listeners/{listener_id}/stats")
def listener_stats(listener_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    with services.database.read() as session:
        row = get_listener(session, ctx, listener_id, Rule.READ)
        totals = stats_repo.listener_totals(session, [row.id])
    return {"stats": totals[row.id]}
