"""``/v2/lbaas/l7policies/{l7policy_id}/rules``: CRUD of L7 rules (wrapper ``rule``).

Rules are a sub-collection: lists are scoped by the parent policy (authorised on its load
balancer's project), not by a ``project_id`` filter. A rule change needs the load balancer
ACTIVE (409 "Load Balancer … is immutable") and then the policy ACTIVE (409 "L7Policy …
is immutable"), and marks the load balancer, the listener and the policy PENDING_UPDATE.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse

from lbaas.api.builders.l7rule import build_l7rule, update_l7rule
from lbaas.api.deps import Call, get_call
from lbaas.api.lookups import get_l7policy
from lbaas.api.quota import check_quota
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, live_children
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.l7rule import L7RuleCreateBody, L7RuleUpdate, L7RuleUpdateBody
from lbaas.api.views.common import single
from lbaas.api.views.l7rule import render_l7rules
from lbaas.api.write_routes import add_delete_route, add_update_route
from lbaas.api.writes import TreeWrite, require_active, tree_write
from lbaas.db.listing import derived_spec
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, L7RuleRow, ListenerRow, LoadBalancerRow
from lbaas.errors import NotFound
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, check_given_id
from lbaas.model.enums import ProvisioningStatus

router = APIRouter(route_class=JsonRoute, tags=["l7rules"])
SPEC = derived_spec(L7RuleRow, aliases={"tenant_id": "project_id"})
_PARENT = "L7Policy"
_DELETED = ProvisioningStatus.DELETED.value
_ITEM = "/lbaas/l7policies/{l7policy_id}/rules/{rule_id}"
_Key = tuple[str, str]  # (policy id, rule id)
_UPDATE = "update_l7rule_route"  # the route's name since its first version


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
    check_given_id(ctx, body.rule)
    with tree_write(services) as w:
        policy = _policy(w.session, ctx, l7policy_id, Rule.WRITE)
        lb, listener = _lock_for_rule_change(w, policy)
        check_quota(w.session, services.settings.quota, lb.project_id, "l7rule")
        row = build_l7rule(w.session, services, lb, policy, body.rule, w.now)
        w.changed(lb, update=[listener, policy])
        view = w.view(_one, row)
    return JSONResponse({"rule": view}, status_code=201)


def _policy_and_rule(
    session: Session, ctx: RequestContext, key: _Key, rule: Rule
) -> tuple[L7PolicyRow, L7RuleRow]:
    policy_id, rule_id = key
    policy = _policy(session, ctx, policy_id, rule)
    return policy, _rule_of(session, policy, rule_id)


def _rule(session: Session, ctx: RequestContext, key: _Key, rule: Rule) -> L7RuleRow:
    return _policy_and_rule(session, ctx, key, rule)[1]


def _update(w: TreeWrite, ctx: RequestContext, key: _Key, data: L7RuleUpdate) -> L7RuleRow:
    policy, row = _policy_and_rule(w.session, ctx, key, Rule.WRITE)
    lb, listener = _lock_for_rule_change(w, policy, row)
    update_l7rule(w.session, w.services, lb, row, data, w.now)
    w.changed(lb, update=[listener, policy, row])
    return row


def _delete(w: TreeWrite, ctx: RequestContext, key: _Key) -> None:
    policy, row = _policy_and_rule(w.session, ctx, key, Rule.WRITE)
    lb, listener = _lock_for_rule_change(w, policy)
    w.changed(lb, update=[listener, policy], delete=[row])


add_show_route(router, _ITEM, "rule", _rule, _one, name="show_l7rule")
add_update_route(router, _ITEM, "rule", L7RuleUpdateBody, _update, _one, name=_UPDATE)
add_delete_route(router, _ITEM, "rule", _delete, name="delete_l7rule")
