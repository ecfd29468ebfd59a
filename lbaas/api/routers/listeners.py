"""``/v2/lbaas/listeners``: CRUD and per-listener statistics.

Every write follows ``lbaas.api.writes``: look the listener (or its load balancer) up
(404), authorise on the load balancer's project (403), lock the load balancer (409 unless
ACTIVE), validate, write, mark the load balancer PENDING_UPDATE and the listener
PENDING_*, and enqueue the converge job in the same transaction. Deleting a listener marks
its L7 policies and rules PENDING_DELETE too; the converge removes them with it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.builders.listener import build_listener, update_listener
from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import list_page, parse_list_params, select_fields
from lbaas.api.policy import Rule, authorize
from lbaas.api.quota import check_quota
from lbaas.api.routers.loadbalancers import get_loadbalancer
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.listener import ListenerCreateBody, ListenerUpdateBody
from lbaas.api.scoping import list_scope
from lbaas.api.services import ApiServices
from lbaas.api.views.listener import render_listeners
from lbaas.api.writes import (
    PENDING_DELETE,
    PENDING_UPDATE,
    enqueue,
    lock_loadbalancer_for_child,
    mark,
    utcnow,
)
from lbaas.db import queries, stats_repo
from lbaas.db.listing import ListSpec
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, L7RuleRow, ListenerRow
from lbaas.errors import NotFound, ValidationFailure

router = APIRouter(route_class=JsonRoute, tags=["listeners"])
T = ListenerRow
# Every scalar attribute of the response; list-valued ones (sni_container_refs,
# allowed_cidrs, tls_versions, alpn_protocols, insert_headers, l7policies) are stored as
# JSON and cannot be compared for equality portably, so they are neither filters nor keys.
SPEC = ListSpec(
    table=T,
    columns={
        "id": T.id,
        "name": T.name,
        "description": T.description,
        "project_id": T.project_id,
        "tenant_id": T.project_id,
        "loadbalancer_id": T.loadbalancer_id,
        "provisioning_status": T.provisioning_status,
        "operating_status": T.operating_status,
        "admin_state_up": T.admin_state_up,
        "protocol": T.protocol,
        "protocol_port": T.protocol_port,
        "connection_limit": T.connection_limit,
        "default_pool_id": T.default_pool_id,
        "default_tls_container_ref": T.default_tls_container_ref,
        "client_ca_tls_container_ref": T.client_ca_tls_container_ref,
        "client_authentication": T.client_authentication,
        "client_crl_container_ref": T.client_crl_container_ref,
        "timeout_client_data": T.timeout_client_data,
        "timeout_member_connect": T.timeout_member_connect,
        "timeout_member_data": T.timeout_member_data,
        "timeout_tcp_inspect": T.timeout_tcp_inspect,
        "tls_ciphers": T.tls_ciphers,
        "hsts_max_age": T.hsts_max_age,
        "hsts_include_subdomains": T.hsts_include_subdomains,
        "hsts_preload": T.hsts_preload,
        "created_at": T.created_at,
        "updated_at": T.updated_at,
    },
    id_column=T.id,
    created_column=T.created_at,
)
BOOL_FILTERS = frozenset({"admin_state_up", "hsts_include_subdomains", "hsts_preload"})
INT_FILTERS = frozenset(
    {
        "protocol_port",
        "connection_limit",
        "timeout_client_data",
        "timeout_member_connect",
        "timeout_member_data",
        "timeout_tcp_inspect",
        "hsts_max_age",
    }
)


def get_listener(
    session: Session, ctx: RequestContext, listener_id: str, rule: Rule
) -> ListenerRow:
    """The visible listener or 404; then 403 unless the caller passes ``rule``."""
    row = session.get(ListenerRow, listener_id)
    if row is None or row.provisioning_status == "DELETED":
        raise NotFound.of("Listener", listener_id)
    authorize(ctx, rule, row.project_id)
    return row


def _one(session: Session, row: ListenerRow) -> dict[str, Any]:
    return render_listeners(session, [row])[0]


@router.get("/lbaas/listeners")
def list_listeners(
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    params = parse_list_params(
        request,
        SPEC,
        services.settings.api.pagination_max_limit,
        bool_filters=BOOL_FILTERS,
        int_filters=INT_FILTERS,
    )
    with services.database.read() as session:
        scope = list_scope(request, ctx, T.project_id)
        return list_page(
            session,
            request,
            SPEC,
            params,
            render_listeners,
            "listeners",
            "listeners_links",
            services.settings.api.api_base_uri,
            [T.provisioning_status != "DELETED", *scope],
        )


@router.post("/lbaas/listeners", status_code=201)
def create_listener(
    body: ListenerCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    data = body.listener
    now = utcnow()
    with services.database.write() as session:
        lb = get_loadbalancer(session, ctx, data.loadbalancer_id, Rule.WRITE)
        if data.default_pool or data.l7policies:
            raise ValidationFailure(
                "default_pool and l7policies can only be given when creating a fully "
                "populated load balancer."
            )
        lb = lock_loadbalancer_for_child(session, lb.id)
        check_quota(session, services.settings.quota, lb.project_id, "listener")
        row = build_listener(session, services, lb, data, now)
        mark([lb], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = _one(session, row)
    services.notify()
    return JSONResponse({"listener": view}, status_code=201)


@router.get("/lbaas/listeners/{listener_id}")
def show_listener(
    listener_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        row = get_listener(session, ctx, listener_id, Rule.READ)
        return {"listener": select_fields(_one(session, row), fields)}


@router.put("/lbaas/listeners/{listener_id}")
def update_listener_route(
    listener_id: str,
    body: ListenerUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    now = utcnow()
    with services.database.write() as session:
        row = get_listener(session, ctx, listener_id, Rule.WRITE)
        lb = lock_loadbalancer_for_child(session, row.loadbalancer_id)
        session.refresh(row)
        update_listener(session, lb, row, body.listener, now)
        mark([lb, row], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = _one(session, row)
    services.notify()
    return {"listener": view}


@router.delete("/lbaas/listeners/{listener_id}", status_code=204)
def delete_listener(
    listener_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    now = utcnow()
    with services.database.write() as session:
        row = get_listener(session, ctx, listener_id, Rule.WRITE)
        lb = lock_loadbalancer_for_child(session, row.loadbalancer_id)
        policies = queries.find_rows(
            session,
            L7PolicyRow,
            L7PolicyRow.listener_id == row.id,
            L7PolicyRow.provisioning_status != "DELETED",
        )
        doomed_rules = queries.find_rows(
            session,
            L7RuleRow,
            L7RuleRow.l7policy_id.in_([p.id for p in policies]),
            L7RuleRow.provisioning_status != "DELETED",
        )
        mark([*doomed_rules, *policies, row], PENDING_DELETE, now)
        mark([lb], PENDING_UPDATE, now)
        enqueue(session, lb.id)
    services.notify()
    return Response(status_code=204)


@router.get("/lbaas/listeners/{listener_id}/stats")
def listener_stats(
    listener_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        row = get_listener(session, ctx, listener_id, Rule.READ)
        totals = stats_repo.listener_totals(session, [row.id])
    return {"stats": totals[row.id]}
