"""``/v2/lbaas/l7policies/{l7policy_id}/rules``: CRUD of L7 rules (wrapper ``rule``).

Rules are a sub-collection: lists are scoped by the parent policy (authorised on its load
balancer's project), not by a ``project_id`` filter. A rule change needs the load balancer
ACTIVE (409 "Load Balancer … is immutable") and then the policy ACTIVE (409 "L7Policy …
is immutable"), and marks the load balancer, the listener and the policy PENDING_UPDATE.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.responses import JSONResponse, Response

from lbaas.api.builders.l7rule import build_l7rule, update_l7rule
from lbaas.api.context import RequestContext
from lbaas.api.deps import Call, get_call
from lbaas.api.listing import select_fields
from lbaas.api.lookups import get_l7policy
from lbaas.api.policy import Rule
from lbaas.api.quota import check_quota
from lbaas.api.read_routes import Listing, add_list_route, live_children
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.l7rule import L7RuleCreateBody, L7RuleUpdateBody
from lbaas.api.views.common import single
from lbaas.api.views.l7rule import render_l7rules
from lbaas.api.writes import TreeWrite, require_active, tree_write
from lbaas.db.listing import derived_spec
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, L7RuleRow, ListenerRow, LoadBalancerRow
from lbaas.errors import NotFound
from lbaas.model.enums import ProvisioningStatus

router = APIRouter(route_class=JsonRoute, tags=["l7rules"])
SPEC = derived_spec(L7RuleRow, aliases={"tenant_id": "project_id"}, exclude={"l7policy_id"})
_PARENT = "L7Policy"
_DELETED = ProvisioningStatus.DELETED.value


def _policy(session: Session, ctx: RequestContext, policy_id: str, rule: Rule) -> L7PolicyRow:
    return get_l7policy(session, ctx, policy_id, rule, kind=_PARENT)


def _rule_of(session: Session, policy: L7PolicyRow, rule_id: str) -> L7RuleRow:
    row = session.get(L7RuleRow, rule_id)
    if row is None or row.l7policy_id != policy.id or row.provisioning_status == _DELETED:
        raise NotFound.of("L7 Rule", rule_id)
    return row


def _lock_for_rule_change(
    w: TreeWrite, policy: L7PolicyRow, *rows: L7RuleRow
) -> tuple[LoadBalancerRow, ListenerRow]:
    """Lock the load balancer (409 unless ACTIVE), then require the policy ACTIVE (409)."""
    listener = w.session.get(ListenerRow, policy.listener_id)
    if listener is None:
        raise NotFound.of("Listener", policy.listener_id)
    lb = w.lock_child(listener.loadbalancer_id, policy)
    require_active(policy, _PARENT)
    for row in rows:
        w.session.refresh(row)
    return lb, listener


_one = single(render_l7rules)


add_list_route(
    router,
    "/lbaas/l7policies/{l7policy_id}/rules",
    Listing(SPEC, render_l7rules, "rules"),
    live_children(_policy, Rule.READ, L7RuleRow, "l7policy_id"),
    name="list_l7rules",
)


@router.post("/lbaas/l7policies/{l7policy_id}/rules", status_code=201)
def create_l7rule(
    l7policy_id: str, body: L7RuleCreateBody, call: Call = Depends(get_call)
) -> JSONResponse:
    services, ctx = call
    with tree_write(services) as w:
        policy = _policy(w.session, ctx, l7policy_id, Rule.WRITE)
        lb, listener = _lock_for_rule_change(w, policy)
        check_quota(w.session, services.settings.quota, lb.project_id, "l7rule")
        row = build_l7rule(w.session, services, lb, policy, body.rule, w.now)
        w.changed(lb, update=[listener, policy])
        view = w.view(_one, row)
    return JSONResponse({"rule": view}, status_code=201)


@router.get("/lbaas/l7policies/{l7policy_id}/rules/{rule_id}")
def show_l7rule(
    l7policy_id: str,
    rule_id: str,
    fields: list[str] = Query(default=[]),
    call: Call = Depends(get_call),
) -> dict[str, Any]:
    services, ctx = call
    with services.database.read() as session:
        policy = _policy(session, ctx, l7policy_id, Rule.READ)
        row = _rule_of(session, policy, rule_id)
        return {"rule": select_fields(_one(session, row), fields)}


@router.put("/lbaas/l7policies/{l7policy_id}/rules/{rule_id}")
def update_l7rule_route(
    l7policy_id: str, rule_id: str, body: L7RuleUpdateBody, call: Call = Depends(get_call)
) -> dict[str, Any]:
    services, ctx = call
    with tree_write(services) as w:
        policy = _policy(w.session, ctx, l7policy_id, Rule.WRITE)
        row = _rule_of(w.session, policy, rule_id)
        lb, listener = _lock_for_rule_change(w, policy, row)
        update_l7rule(w.session, services, lb, row, body.rule, w.now)
        w.changed(lb, update=[listener, policy, row])
        view = w.view(_one, row)
    return {"rule": view}


@router.delete("/lbaas/l7policies/{l7policy_id}/rules/{rule_id}", status_code=204)
def delete_l7rule(l7policy_id: str, rule_id: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    with tree_write(services) as w:
        policy = _policy(w.session, ctx, l7policy_id, Rule.WRITE)
        row = _rule_of(w.session, policy, rule_id)
        lb, listener = _lock_for_rule_change(w, policy)
        w.changed(lb, update=[listener, policy], delete=[row])
    return Response(status_code=204)
