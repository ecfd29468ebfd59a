"""``/v2/lbaas/healthmonitors``: CRUD of the one health monitor a pool may have.

A monitor's writes lock like a member's (pool and load balancer ACTIVE; load balancer,
listeners using the pool and the pool go PENDING_UPDATE). Deleting a monitor leaves the
pool's members unobserved, so they become NO_MONITOR in the same transaction rather than
whenever health reports stop. ``build_healthmonitor`` is the validated row constructor
shared with the single-call load balancer create.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.capabilities import require_capability
from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import list_page, parse_list_params, select_fields
from lbaas.api.policy import Rule, authorize
from lbaas.api.quota import check_quota
from lbaas.api.routers.pools import find_pool, get_pool, lock_pool_for_child
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.healthmonitor import (
    HealthMonitorCreateBody,
    HealthMonitorSingleCreate,
    HealthMonitorUpdate,
    HealthMonitorUpdateBody,
)
from lbaas.api.scoping import list_scope
from lbaas.api.services import ApiServices
from lbaas.api.validation import healthmonitor as rules
from lbaas.api.views.healthmonitor import render_healthmonitor, render_healthmonitors
from lbaas.api.writes import PENDING_CREATE, PENDING_DELETE, PENDING_UPDATE, enqueue, mark, utcnow
from lbaas.db import queries
from lbaas.db.listing import ListSpec, add_tags, set_tags
from lbaas.db.session import Session
from lbaas.db.tables import HealthMonitorRow, LoadBalancerRow, MemberRow, PoolRow
from lbaas.errors import Conflict, InvalidInput, NotFound
from lbaas.model.enums import OperatingStatus

router = APIRouter(route_class=JsonRoute, tags=["healthmonitors"])
T = HealthMonitorRow
SPEC = ListSpec(
    table=T,
    columns={
        "id": T.id,
        "name": T.name,
        "project_id": T.project_id,
        "tenant_id": T.project_id,
        "pool_id": T.pool_id,
        "provisioning_status": T.provisioning_status,
        "operating_status": T.operating_status,
        "admin_state_up": T.admin_state_up,
        "type": T.type,
        "delay": T.delay,
        "timeout": T.timeout,
        "max_retries": T.max_retries,
        "max_retries_down": T.max_retries_down,
        "http_method": T.http_method,
        "url_path": T.url_path,
        "expected_codes": T.expected_codes,
        "http_version": T.http_version,
        "domain_name": T.domain_name,
        "created_at": T.created_at,
        "updated_at": T.updated_at,
    },
    id_column=T.id,
    created_column=T.created_at,
)


def build_healthmonitor(
    session: Session,
    services: ApiServices,
    pool: PoolRow,
    data: HealthMonitorSingleCreate,
    now: datetime,
) -> HealthMonitorRow:
    """Validate a pool's new health monitor and add it (PENDING_CREATE, OFFLINE).

    409 if the pool already has one. No lock, quota, job or notification here.
    """
    hm_type = data.type.value
    lb = session.get(LoadBalancerRow, pool.loadbalancer_id)
    if lb is not None:
        require_capability(
            services, lb.provider, "health monitor type", data.type, "health_monitor_types"
        )
    rules.check_type_for_pool(hm_type, pool.protocol)
    rules.check_udp_connect_delay(hm_type, data.delay)
    http = rules.http_fields_on_create(
        hm_type,
        {
            "http_method": data.http_method.value if data.http_method else None,
            "url_path": data.url_path,
            "expected_codes": data.expected_codes,
        },
    )
    rules.check_domain_name(data.domain_name, data.http_version)
    if queries.find_rows(session, HealthMonitorRow, HealthMonitorRow.pool_id == pool.id):
        raise Conflict("This pool already has a health monitor")
    row = HealthMonitorRow(
        id=str(uuid.uuid4()),
        pool_id=pool.id,
        project_id=pool.project_id,
        name=data.name,
        admin_state_up=data.admin_state_up,
        type=hm_type,
        delay=data.delay,
        timeout=data.timeout,
        max_retries=data.max_retries,
        max_retries_down=data.max_retries_down,
        http_method=http["http_method"],
        url_path=http["url_path"],
        expected_codes=http["expected_codes"],
        http_version=data.http_version,
        domain_name=data.domain_name,
        provisioning_status=PENDING_CREATE,
        operating_status=OperatingStatus.OFFLINE.value,
        created_at=now,
    )
    session.add(row)
    add_tags(session, row.id, data.tags or [])
    return row


def _monitor_and_pool(
    session: Session, ctx: RequestContext, hm_id: str, rule: Rule
) -> tuple[HealthMonitorRow, PoolRow]:
    row: HealthMonitorRow | None = session.get(HealthMonitorRow, hm_id)
    if row is None or row.provisioning_status == "DELETED":
        raise NotFound.of("Health Monitor", hm_id)
    authorize(ctx, rule, row.project_id)
    return row, find_pool(session, row.pool_id)


def _http_version_filter(request: Request) -> list[Any]:
    raw = request.query_params.get("http_version")
    if raw is None:
        return []
    try:
        return [T.http_version == float(raw)]
    except ValueError:
        raise InvalidInput("One or more arguments are either duplicate or invalid") from None


@router.get("/lbaas/healthmonitors")
def list_healthmonitors(
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    params = parse_list_params(
        request,
        SPEC,
        services.settings.api.pagination_max_limit,
        bool_filters=frozenset({"admin_state_up"}),
        int_filters=frozenset({"delay", "timeout", "max_retries", "max_retries_down"}),
        extra_allowed=frozenset({"http_version"}),
    )
    extra = _http_version_filter(request)
    with services.database.read() as session:
        scope = list_scope(request, ctx, T.project_id)
        return list_page(
            session,
            request,
            SPEC,
            params,
            render_healthmonitors,
            "healthmonitors",
            "healthmonitors_links",
            services.settings.api.api_base_uri,
            [T.provisioning_status != "DELETED", *scope, *extra],
        )


@router.post("/lbaas/healthmonitors", status_code=201)
def create_healthmonitor(
    body: HealthMonitorCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    data = body.healthmonitor
    now = utcnow()
    with services.database.write() as session:
        pool = get_pool(session, ctx, data.pool_id, Rule.WRITE)
        lb, listeners = lock_pool_for_child(session, pool)
        check_quota(session, services.settings.quota, pool.project_id, "healthmonitor")
        row = build_healthmonitor(session, services, pool, data, now)
        mark([lb, *listeners, pool], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = render_healthmonitor(session, row)
    services.notify()
    return JSONResponse({"healthmonitor": view}, status_code=201)


@router.get("/lbaas/healthmonitors/{hm_id}")
def show_healthmonitor(
    hm_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        row, _ = _monitor_and_pool(session, ctx, hm_id, Rule.READ)
        return {"healthmonitor": select_fields(render_healthmonitor(session, row), fields)}


def _apply_update(session: Session, row: HealthMonitorRow, data: HealthMonitorUpdate) -> None:
    for name in ("name", "delay", "timeout", "max_retries", "http_version", "domain_name"):
        if data.given(name):
            setattr(row, name, getattr(data, name))
    if data.given("admin_state_up"):
        row.admin_state_up = bool(data.admin_state_up)
    if data.given("max_retries_down"):
        down = data.max_retries_down
        row.max_retries_down = rules.DEFAULT_MAX_RETRIES_DOWN if down is None else down
    if data.given("http_method"):
        method = data.http_method.value if data.http_method else None
        row.http_method = method or rules.HTTP_DEFAULTS["http_method"]
    if data.given("url_path"):
        row.url_path = data.url_path or rules.HTTP_DEFAULTS["url_path"]
    if data.given("expected_codes"):
        row.expected_codes = data.expected_codes or rules.HTTP_DEFAULTS["expected_codes"]
    rules.check_domain_name(row.domain_name, row.http_version)
    rules.check_udp_connect_delay(row.type, row.delay)
    if data.given("tags") and data.tags is not None:
        set_tags(session, row.id, data.tags)


@router.put("/lbaas/healthmonitors/{hm_id}")
def update_healthmonitor(
    hm_id: str,
    body: HealthMonitorUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    data = body.healthmonitor
    now = utcnow()
    with services.database.write() as session:
        row, pool = _monitor_and_pool(session, ctx, hm_id, Rule.WRITE)
        rules.check_http_fields_on_update(row.type, data.model_fields_set)
        rules.check_required_on_update({n: getattr(data, n) for n in data.model_fields_set})
        lb, listeners = lock_pool_for_child(session, pool)
        session.refresh(row)
        _apply_update(session, row, data)
        mark([lb, *listeners, pool, row], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = render_healthmonitor(session, row)
    services.notify()
    return {"healthmonitor": view}


@router.delete("/lbaas/healthmonitors/{hm_id}", status_code=204)
def delete_healthmonitor(
    hm_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    now = utcnow()
    with services.database.write() as session:
        row, pool = _monitor_and_pool(session, ctx, hm_id, Rule.WRITE)
        lb, listeners = lock_pool_for_child(session, pool)
        session.refresh(row)
        mark([lb, *listeners, pool], PENDING_UPDATE, now)
        mark([row], PENDING_DELETE, now)
        unobserved = OperatingStatus.NO_MONITOR.value
        for member in queries.find_rows(session, MemberRow, MemberRow.pool_id == pool.id):
            if member.operating_status != unobserved:
                member.operating_status = unobserved
                member.updated_at = now
        enqueue(session, lb.id)
    services.notify()
    return Response(status_code=204)
