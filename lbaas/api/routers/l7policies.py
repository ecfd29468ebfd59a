"""``/v2/lbaas/l7policies``: CRUD of L7 policies.

A policy change locks the load balancer (409 unless ACTIVE) and marks it and the policy's
listener PENDING_UPDATE. Deleting a policy marks its rules PENDING_DELETE with it and
renumbers the listener's remaining policies at once, so positions stay 1..N.
"""

from __future__ import annotations

from fastapi import APIRouter

from lbaas.api.builders.l7policy import build_l7policy, renumber_without, update_l7policy
from lbaas.api.lookups import get_l7policy, get_listener
from lbaas.api.quota import check_quota
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, tree_conditions
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.l7policy import (
    L7PolicyCreate,
    L7PolicyCreateBody,
    L7PolicyUpdate,
    L7PolicyUpdateBody,
)
from lbaas.api.views.common import single
from lbaas.api.views.l7policy import render_l7policies
from lbaas.api.write_routes import add_create_route, add_delete_route, add_update_route
from lbaas.api.writes import TreeWrite
from lbaas.db.listing import derived_spec
from lbaas.db.loadbalancers import l7_repo
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, ListenerRow
from lbaas.errors import NotFound
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule

router = APIRouter(route_class=JsonRoute, tags=["l7policies"])
SPEC = derived_spec(L7PolicyRow, aliases={"tenant_id": "project_id"})
_ITEM = "/lbaas/l7policies/{policy_id}"
_UPDATE = "update_l7policy_route"  # the route's name since its first version


_one = single(render_l7policies)


def _listener_of(session: Session, policy: L7PolicyRow) -> ListenerRow:
    listener = session.get(ListenerRow, policy.listener_id)
    if listener is None:
        raise NotFound.of("Listener", policy.listener_id)
    return listener


add_list_route(
    router,
    "/lbaas/l7policies",
    Listing(SPEC, render_l7policies, "l7policies"),
    tree_conditions(SPEC),
)


def _create(w: TreeWrite, ctx: RequestContext, data: L7PolicyCreate) -> L7PolicyRow:
    listener = get_listener(w.session, ctx, data.listener_id, Rule.WRITE)
    lb = w.lock_child(listener.loadbalancer_id, listener)
    quota = w.services.settings.quota
    check_quota(w.session, quota, lb.project_id, "l7policy")
    check_quota(w.session, quota, lb.project_id, "l7rule", len(data.rules or []))
    row = build_l7policy(w.session, w.services, listener, lb, data, w.now)
    w.changed(lb, update=[listener])
    return row


add_create_route(router, "/lbaas/l7policies", "l7policy", L7PolicyCreateBody, _create, _one)


add_show_route(router, _ITEM, "l7policy", get_l7policy, _one)


def _update(w: TreeWrite, ctx: RequestContext, policy_id: str, data: L7PolicyUpdate) -> L7PolicyRow:
    row = get_l7policy(w.session, ctx, policy_id, Rule.WRITE)
    listener = _listener_of(w.session, row)
    lb = w.lock_child(listener.loadbalancer_id, row)
    update_l7policy(w.session, w.services, lb, listener, row, data, w.now)
    w.changed(lb, update=[listener, row])
    return row


def _delete(w: TreeWrite, ctx: RequestContext, policy_id: str) -> None:
    row = get_l7policy(w.session, ctx, policy_id, Rule.WRITE)
    listener = _listener_of(w.session, row)
    lb = w.lock_child(listener.loadbalancer_id)
    rules = l7_repo.live_rules_of(w.session, row.id)
    w.changed(lb, update=[listener], delete=[*rules, row])
    renumber_without(w.session, listener.id, row.id)


add_update_route(router, _ITEM, "l7policy", L7PolicyUpdateBody, _update, _one, name=_UPDATE)
add_delete_route(router, _ITEM, "l7policy", _delete)
