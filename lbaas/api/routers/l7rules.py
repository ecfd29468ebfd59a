"""``/v2/lbaas/l7policies/{l7policy_id}/rules``: CRUD of L7 rules (wrapper ``rule``).

Rules are a sub-collection: lists are scoped by the parent policy (authorised on its load
balancer's project), not by a ``project_id`` filter. A rule change needs the load balancer
ACTIVE (409 "Load Balancer … is immutable") and then the policy ACTIVE (409 "L7Policy …
is immutable"), and marks the load balancer, the listener and the policy PENDING_UPDATE.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.builders.l7rule import build_l7rule, update_l7rule
from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import list_page, parse_list_params, select_fields
from lbaas.api.policy import Rule
from lbaas.api.quota import check_quota
from lbaas.api.routers.l7policies import get_l7policy
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.l7rule import L7RuleCreateBody, L7RuleUpdateBody
from lbaas.api.services import ApiServices
from lbaas.api.views.l7rule import render_l7rules
from lbaas.api.writes import (
    PENDING_DELETE,
    PENDING_UPDATE,
    enqueue,
    lock_loadbalancer_for_child,
    mark,
    require_active,
    utcnow,
)
from lbaas.db.listing import ListSpec
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, L7RuleRow, ListenerRow, LoadBalancerRow
from lbaas.errors import NotFound

router = APIRouter(route_class=JsonRoute, tags=["l7rules"])
T = L7RuleRow
SPEC = ListSpec(
    table=T,
    columns={
        "id": T.id,
        "project_id": T.project_id,
        "tenant_id": T.project_id,
        "provisioning_status": T.provisioning_status,
        "operating_status": T.operating_status,
        "admin_state_up": T.admin_state_up,
        "type": T.type,
        "compare_type": T.compare_type,
        "key": T.key,
        "value": T.value,
        "invert": T.invert,
        "created_at": T.created_at,
        "updated_at": T.updated_at,
    },
    id_column=T.id,
    created_column=T.created_at,
)
_PARENT = "L7Policy"


def _policy(session: Session, ctx: RequestContext, policy_id: str, rule: Rule) -> L7PolicyRow:
    return get_l7policy(session, ctx, policy_id, rule, kind=_PARENT)


def _rule_of(session: Session, policy: L7PolicyRow, rule_id: str) -> L7RuleRow:
    row = session.get(L7RuleRow, rule_id)
    if row is None or row.l7policy_id != policy.id or row.provisioning_status == "DELETED":
        raise NotFound.of("L7 Rule", rule_id)
    return row


def _lock_for_rule_change(
    session: Session, policy: L7PolicyRow
) -> tuple[LoadBalancerRow, ListenerRow]:
    """Lock the load balancer (409 unless ACTIVE), then require the policy ACTIVE (409)."""
    listener = session.get(ListenerRow, policy.listener_id)
    if listener is None:
        raise NotFound.of("Listener", policy.listener_id)
    lb = lock_loadbalancer_for_child(session, listener.loadbalancer_id)
    session.refresh(policy)
    require_active(policy, _PARENT)
    return lb, listener


def _one(session: Session, row: L7RuleRow) -> dict[str, Any]:
    return render_l7rules(session, [row])[0]


@router.get("/lbaas/l7policies/{l7policy_id}/rules")
def list_l7rules(
    l7policy_id: str,
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    params = parse_list_params(
        request,
        SPEC,
        services.settings.api.pagination_max_limit,
        bool_filters=frozenset({"admin_state_up", "invert"}),
    )
    with services.database.read() as session:
        policy = _policy(session, ctx, l7policy_id, Rule.READ)
        return list_page(
            session,
            request,
            SPEC,
            params,
            render_l7rules,
            "rules",
            "rules_links",
            services.settings.api.api_base_uri,
            [T.l7policy_id == policy.id, T.provisioning_status != "DELETED"],
        )


@router.post("/lbaas/l7policies/{l7policy_id}/rules", status_code=201)
def create_l7rule(
    l7policy_id: str,
    body: L7RuleCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    now = utcnow()
    with services.database.write() as session:
        policy = _policy(session, ctx, l7policy_id, Rule.WRITE)
        lb, listener = _lock_for_rule_change(session, policy)
        check_quota(session, services.settings.quota, lb.project_id, "l7rule")
        row = build_l7rule(session, services, lb, policy, body.rule, now)
        mark([lb, listener, policy], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = _one(session, row)
    services.notify()
    return JSONResponse({"rule": view}, status_code=201)


@router.get("/lbaas/l7policies/{l7policy_id}/rules/{rule_id}")
def show_l7rule(
    l7policy_id: str,
    rule_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        policy = _policy(session, ctx, l7policy_id, Rule.READ)
        row = _rule_of(session, policy, rule_id)
        return {"rule": select_fields(_one(session, row), fields)}


@router.put("/lbaas/l7policies/{l7policy_id}/rules/{rule_id}")
def update_l7rule_route(
    l7policy_id: str,
    rule_id: str,
    body: L7RuleUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    now = utcnow()
    with services.database.write() as session:
        policy = _policy(session, ctx, l7policy_id, Rule.WRITE)
        row = _rule_of(session, policy, rule_id)
        lb, listener = _lock_for_rule_change(session, policy)
        session.refresh(row)
        update_l7rule(session, services, lb, row, body.rule, now)
        mark([lb, listener, policy], PENDING_UPDATE, now)
        mark([row], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = _one(session, row)
    services.notify()
    return {"rule": view}


@router.delete("/lbaas/l7policies/{l7policy_id}/rules/{rule_id}", status_code=204)
def delete_l7rule(
    l7policy_id: str,
    rule_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    now = utcnow()
    with services.database.write() as session:
        policy = _policy(session, ctx, l7policy_id, Rule.WRITE)
        row = _rule_of(session, policy, rule_id)
        lb, listener = _lock_for_rule_change(session, policy)
        mark([row], PENDING_DELETE, now)
        mark([lb, listener, policy], PENDING_UPDATE, now)
        enqueue(session, lb.id)
    services.notify()
    return Response(status_code=204)
