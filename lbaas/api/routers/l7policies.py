"""``/v2/lbaas/l7policies``: CRUD of L7 policies.

A policy change locks the load balancer (409 unless ACTIVE) and marks it and the policy's
listener PENDING_UPDATE. Deleting a policy marks its rules PENDING_DELETE with it and
renumbers the listener's remaining policies at once, so positions stay 1..N.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.builders.l7policy import build_l7policy, renumber_without, update_l7policy
from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import list_page, parse_list_params, select_fields
from lbaas.api.policy import Rule, authorize
from lbaas.api.quota import check_quota
from lbaas.api.routers.listeners import get_listener
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.l7policy import L7PolicyCreateBody, L7PolicyUpdateBody
from lbaas.api.scoping import list_scope
from lbaas.api.services import ApiServices
from lbaas.api.views.l7policy import render_l7policies
from lbaas.api.writes import (
    PENDING_DELETE,
    PENDING_UPDATE,
    enqueue,
    lock_loadbalancer_for_child,
    mark,
    utcnow,
)
from lbaas.db import queries
from lbaas.db.listing import ListSpec
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, L7RuleRow, ListenerRow
from lbaas.errors import NotFound

router = APIRouter(route_class=JsonRoute, tags=["l7policies"])
T = L7PolicyRow
SPEC = ListSpec(
    table=T,
    columns={
        "id": T.id,
        "name": T.name,
        "description": T.description,
        "project_id": T.project_id,
        "tenant_id": T.project_id,
        "provisioning_status": T.provisioning_status,
        "operating_status": T.operating_status,
        "admin_state_up": T.admin_state_up,
        "action": T.action,
        "listener_id": T.listener_id,
        "redirect_pool_id": T.redirect_pool_id,
        "redirect_url": T.redirect_url,
        "redirect_prefix": T.redirect_prefix,
        "redirect_http_code": T.redirect_http_code,
        "position": T.position,
        "created_at": T.created_at,
        "updated_at": T.updated_at,
    },
    id_column=T.id,
    created_column=T.created_at,
)


def get_l7policy(
    session: Session, ctx: RequestContext, policy_id: str, rule: Rule, kind: str = "L7 Policy"
) -> L7PolicyRow:
    """The visible policy or 404 (``kind`` names it in the message); then 403."""
    row = session.get(L7PolicyRow, policy_id)
    if row is None or row.provisioning_status == "DELETED":
        raise NotFound.of(kind, policy_id)
    authorize(ctx, rule, row.project_id)
    return row


def _one(session: Session, row: L7PolicyRow) -> dict[str, Any]:
    return render_l7policies(session, [row])[0]


@router.get("/lbaas/l7policies")
def list_l7policies(
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    params = parse_list_params(
        request,
        SPEC,
        services.settings.api.pagination_max_limit,
        bool_filters=frozenset({"admin_state_up"}),
        int_filters=frozenset({"position", "redirect_http_code"}),
    )
    with services.database.read() as session:
        scope = list_scope(request, ctx, T.project_id)
        return list_page(
            session,
            request,
            SPEC,
            params,
            render_l7policies,
            "l7policies",
            "l7policies_links",
            services.settings.api.api_base_uri,
            [T.provisioning_status != "DELETED", *scope],
        )


@router.post("/lbaas/l7policies", status_code=201)
def create_l7policy(
    body: L7PolicyCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    data = body.l7policy
    now = utcnow()
    with services.database.write() as session:
        listener = get_listener(session, ctx, data.listener_id, Rule.WRITE)
        lb = lock_loadbalancer_for_child(session, listener.loadbalancer_id)
        session.refresh(listener)
        check_quota(session, services.settings.quota, lb.project_id, "l7policy")
        check_quota(
            session, services.settings.quota, lb.project_id, "l7rule", len(data.rules or [])
        )
        row = build_l7policy(session, services, listener, lb, data, now)
        mark([lb, listener], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = _one(session, row)
    services.notify()
    return JSONResponse({"l7policy": view}, status_code=201)


@router.get("/lbaas/l7policies/{policy_id}")
def show_l7policy(
    policy_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        row = get_l7policy(session, ctx, policy_id, Rule.READ)
        return {"l7policy": select_fields(_one(session, row), fields)}


@router.put("/lbaas/l7policies/{policy_id}")
def update_l7policy_route(
    policy_id: str,
    body: L7PolicyUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    now = utcnow()
    with services.database.write() as session:
        row = get_l7policy(session, ctx, policy_id, Rule.WRITE)
        listener = _listener_of(session, row)
        lb = lock_loadbalancer_for_child(session, listener.loadbalancer_id)
        session.refresh(row)
        update_l7policy(session, services, lb, listener, row, body.l7policy, now)
        mark([lb, listener, row], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = _one(session, row)
    services.notify()
    return {"l7policy": view}


@router.delete("/lbaas/l7policies/{policy_id}", status_code=204)
def delete_l7policy(
    policy_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    now = utcnow()
    with services.database.write() as session:
        row = get_l7policy(session, ctx, policy_id, Rule.WRITE)
        listener = _listener_of(session, row)
        lb = lock_loadbalancer_for_child(session, listener.loadbalancer_id)
        doomed_rules = queries.find_rows(
            session,
            L7RuleRow,
            L7RuleRow.l7policy_id == row.id,
            L7RuleRow.provisioning_status != "DELETED",
        )
        mark([*doomed_rules, row], PENDING_DELETE, now)
        renumber_without(session, listener.id, row.id)
        mark([lb, listener], PENDING_UPDATE, now)
        enqueue(session, lb.id)
    services.notify()
    return Response(status_code=204)


def _listener_of(session: Session, policy: L7PolicyRow) -> ListenerRow:
    listener = session.get(ListenerRow, policy.listener_id)
    if listener is None:
        raise NotFound.of("Listener", policy.listener_id)
    return listener
