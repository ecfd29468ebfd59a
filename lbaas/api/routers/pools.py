"""``/v2/lbaas/pools``: CRUD, and the pool pieces members and health monitors reuse.

``build_pool`` validates a pool against its (already locked) load balancer and adds the
row; the standalone POST wraps it with the lock, quota and job, and the single-call load
balancer create calls it as it is. ``get_pool`` and ``lock_pool_for_child`` are the
lookups and the 409 test-and-set of member and health monitor writes: the load balancer
row is locked first (it serialises every change of the tree), then the pool must be
ACTIVE, then the load balancer.
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
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.pool import PoolCreate, PoolCreateBody, PoolSingleCreate, PoolUpdateBody
from lbaas.api.scoping import list_scope
from lbaas.api.services import ApiServices
from lbaas.api.validation import pool as rules
from lbaas.api.views.pool import render_pool, render_pools
from lbaas.api.writes import (
    ACTIVE,
    PENDING_CREATE,
    PENDING_DELETE,
    PENDING_UPDATE,
    enqueue,
    lock_loadbalancer_for_child,
    mark,
    require_active,
    utcnow,
)
from lbaas.db import pool_queries, queries
from lbaas.db.listing import ListSpec, add_tags, set_tags
from lbaas.db.session import Session
from lbaas.db.tables import (
    HealthMonitorRow,
    L7PolicyRow,
    ListenerRow,
    LoadBalancerRow,
    MemberRow,
    PoolRow,
)
from lbaas.errors import Conflict, InvalidInput, NotFound, ValidationFailure
from lbaas.model.enums import OperatingStatus

router = APIRouter(route_class=JsonRoute, tags=["pools"])
T = PoolRow
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
        "protocol": T.protocol,
        "lb_algorithm": T.lb_algorithm,
        "loadbalancer_id": T.loadbalancer_id,
        "tls_enabled": T.tls_enabled,
        "tls_container_ref": T.tls_container_ref,
        "ca_tls_container_ref": T.ca_tls_container_ref,
        "crl_container_ref": T.crl_container_ref,
        "tls_ciphers": T.tls_ciphers,
        "created_at": T.created_at,
        "updated_at": T.updated_at,
    },
    id_column=T.id,
    created_column=T.created_at,
)
REF_FIELDS = ("tls_container_ref", "ca_tls_container_ref", "crl_container_ref")


# -- shared with members and health monitors ----------------------------------------------


def find_pool(session: Session, pool_id: str) -> PoolRow:
    """The visible pool or 404 (no authorisation: callers authorise on its project)."""
    row: PoolRow | None = session.get(PoolRow, pool_id)
    if row is None or row.provisioning_status == "DELETED":
        raise NotFound.of("Pool", pool_id)
    return row


def get_pool(session: Session, ctx: RequestContext, pool_id: str, rule: Rule) -> PoolRow:
    """The visible pool or 404; then 403 unless the caller passes ``rule`` on its project."""
    row = find_pool(session, pool_id)
    authorize(ctx, rule, row.project_id)
    return row


def lock_pool_for_child(
    session: Session, pool: PoolRow
) -> tuple[LoadBalancerRow, list[ListenerRow]]:
    """Lock the tree for a member or monitor change: 409 unless pool and LB are ACTIVE."""
    lb = queries.lock_loadbalancer(session, pool.loadbalancer_id)
    if lb is None:
        raise NotFound.of("Load Balancer", pool.loadbalancer_id)
    session.refresh(pool)
    require_active(pool, "Pool")
    if lb.provisioning_status != ACTIVE:
        raise Conflict(f"Load Balancer {lb.id} is immutable and cannot be updated.")
    return lb, pool_queries.listeners_using_pool(session, pool.id)


def visible_loadbalancer(
    session: Session, ctx: RequestContext, lb_id: str, rule: Rule
) -> LoadBalancerRow:
    """The parent load balancer named in a body: 404 if gone, then 403 unless allowed."""
    lb: LoadBalancerRow | None = session.get(LoadBalancerRow, lb_id)
    if lb is None or lb.provisioning_status == "DELETED":
        raise NotFound.of("Load Balancer", lb_id)
    authorize(ctx, rule, lb.project_id)
    return lb


def has_live_monitor(session: Session, pool_id: str) -> bool:
    """Whether new members start OFFLINE (monitored) rather than NO_MONITOR."""
    monitors = queries.find_rows(session, HealthMonitorRow, HealthMonitorRow.pool_id == pool_id)
    return any(hm.provisioning_status not in (PENDING_DELETE, "DELETED") for hm in monitors)


# -- building a pool ------------------------------------------------------------------------


def _persistence(
    services: ApiServices, provider: str, sp: rules.Persistence, protocol: str
) -> dict[str, object]:
    rules.check_session_persistence(sp, protocol)
    require_capability(
        services, provider, "session_persistence type", str(sp.type), "persistence_types"
    )
    return sp.as_dict()


def build_pool(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    data: PoolCreate | PoolSingleCreate,
    now: datetime,
    *,
    listener: ListenerRow | None = None,
) -> PoolRow:
    """Validate a new pool of a locked load balancer and add it (PENDING_CREATE, OFFLINE).

    With ``listener`` the pool becomes that listener's default pool (protocols must fit,
    and the listener must not have one). No lock, quota, job or notification here.
    """
    if data.protocol is None or data.lb_algorithm is None:
        missing = "protocol" if data.protocol is None else "lb_algorithm"
        raise InvalidInput(
            f"Pool definition for '{data.name or ''}' missing required attribute: {missing}"
        )
    protocol = data.protocol.value
    require_capability(services, lb.provider, "protocol", data.protocol, "pool_protocols")
    require_capability(services, lb.provider, "lb_algorithm", data.lb_algorithm, "lb_algorithms")
    persistence = None
    if data.session_persistence is not None:
        sp = data.session_persistence
        persistence = _persistence(
            services,
            lb.provider,
            rules.Persistence(
                sp.type.value,
                sp.cookie_name,
                sp.persistence_timeout,
                sp.persistence_granularity,
            ),
            protocol,
        )
    rules.check_tls_refs_on_create(
        rules.TlsRefs(data.tls_container_ref, data.ca_tls_container_ref, data.crl_container_ref)
    )
    rules.check_tls_versions(data.tls_versions)
    rules.check_alpn_protocols(data.alpn_protocols)
    if listener is not None:
        rules.check_listener_pool_protocols(listener.protocol, protocol)
        if listener.default_pool_id is not None:
            raise Conflict("This listener already has a default pool")
    row = PoolRow(
        id=str(uuid.uuid4()),
        loadbalancer_id=lb.id,
        project_id=lb.project_id,
        name=data.name,
        description=data.description,
        admin_state_up=data.admin_state_up,
        protocol=protocol,
        lb_algorithm=data.lb_algorithm.value,
        session_persistence=persistence,
        tls_enabled=data.tls_enabled,
        tls_container_ref=None,
        ca_tls_container_ref=None,
        crl_container_ref=None,
        tls_ciphers=data.tls_ciphers,
        tls_versions=data.tls_versions,
        alpn_protocols=data.alpn_protocols,
        provisioning_status=PENDING_CREATE,
        operating_status=OperatingStatus.OFFLINE.value,
        created_at=now,
    )
    if data.tls_enabled:
        _fill_tls_defaults(row)
    session.add(row)
    session.flush()
    if listener is not None:
        listener.default_pool_id = row.id
    add_tags(session, row.id, data.tags or [])
    return row


def _fill_tls_defaults(row: PoolRow) -> None:
    if row.tls_ciphers is None:
        row.tls_ciphers = rules.DEFAULT_TLS_CIPHERS
    if row.tls_versions is None:
        row.tls_versions = list(rules.DEFAULT_TLS_VERSIONS)
    if row.alpn_protocols is None:
        row.alpn_protocols = list(rules.DEFAULT_ALPN_PROTOCOLS)


# -- routes -----------------------------------------------------------------------------------


def _extra_filters(session: Session, request: Request) -> list[Any]:
    """``listener_id`` and ``healthmonitor_id`` are relations, not pool columns."""
    conditions: list[Any] = []
    listener_id = request.query_params.get("listener_id")
    if listener_id is not None:
        conditions.append(T.id.in_(pool_queries.pools_used_by_listener(session, listener_id)))
    monitor_id = request.query_params.get("healthmonitor_id")
    if monitor_id is not None:
        hm = session.get(HealthMonitorRow, monitor_id)
        conditions.append(T.id.in_([hm.pool_id] if hm is not None else []))
    return conditions


@router.get("/lbaas/pools")
def list_pools(
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    params = parse_list_params(
        request,
        SPEC,
        services.settings.api.pagination_max_limit,
        bool_filters=frozenset({"admin_state_up", "tls_enabled"}),
        extra_allowed=frozenset({"listener_id", "healthmonitor_id"}),
    )
    with services.database.read() as session:
        scope = list_scope(request, ctx, T.project_id)
        return list_page(
            session,
            request,
            SPEC,
            params,
            render_pools,
            "pools",
            "pools_links",
            services.settings.api.api_base_uri,
            [T.provisioning_status != "DELETED", *scope, *_extra_filters(session, request)],
        )


def _listener_for_pool(session: Session, listener_id: str) -> ListenerRow:
    listener: ListenerRow | None = session.get(ListenerRow, listener_id)
    if listener is None or listener.provisioning_status == "DELETED":
        raise NotFound.of("Listener", listener_id)
    return listener


@router.post("/lbaas/pools", status_code=201)
def create_pool(
    body: PoolCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    data = body.pool
    if data.loadbalancer_id is None and data.listener_id is None:
        raise ValidationFailure("Must provide at least one of: loadbalancer_id, listener_id")
    now = utcnow()
    with services.database.write() as session:
        listener = None
        if data.listener_id is not None:
            listener = _listener_for_pool(session, data.listener_id)
        lb_id = data.loadbalancer_id or (listener.loadbalancer_id if listener else "")
        visible_loadbalancer(session, ctx, lb_id, Rule.WRITE)
        if listener is not None and listener.loadbalancer_id != lb_id:
            raise NotFound.of("Listener", listener.id)
        lb = lock_loadbalancer_for_child(session, lb_id)
        if listener is not None:
            session.refresh(listener)
        check_quota(session, services.settings.quota, lb.project_id, "pool")
        row = build_pool(session, services, lb, data, now, listener=listener)
        mark([lb, *([listener] if listener is not None else [])], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = render_pool(session, row)
    services.notify()
    return JSONResponse({"pool": view}, status_code=201)


@router.get("/lbaas/pools/{pool_id}")
def show_pool(
    pool_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        row = get_pool(session, ctx, pool_id, Rule.READ)
        return {"pool": select_fields(render_pool(session, row), fields)}


def _update_persistence(
    services: ApiServices, provider: str, row: PoolRow, body: PoolUpdateBody
) -> None:
    sp = body.pool.session_persistence
    if sp is None or not sp.model_fields_set:
        row.session_persistence = None  # null or {} removes persistence
        return
    stored = row.session_persistence or {}
    kind = sp.type.value if sp.type is not None else stored.get("type")
    if kind is None:
        raise InvalidInput(
            "Invalid input for field/attribute type. Value: 'None'. Mandatory field missing."
        )
    wanted = rules.Persistence(
        str(kind), sp.cookie_name, sp.persistence_timeout, sp.persistence_granularity
    )
    row.session_persistence = _persistence(services, provider, wanted, row.protocol)


def _update_tls(row: PoolRow, body: PoolUpdateBody) -> None:
    data = body.pool
    sent = {name: getattr(data, name) for name in REF_FIELDS if data.given(name)}
    stored = rules.TlsRefs(row.tls_container_ref, row.ca_tls_container_ref, row.crl_container_ref)
    rules.check_tls_refs_on_update(stored, sent)
    for name, value in sent.items():
        setattr(row, name, value)
    if data.given("tls_enabled"):
        row.tls_enabled = bool(data.tls_enabled)
    if data.given("tls_versions"):
        rules.check_tls_versions(data.tls_versions)
        row.tls_versions = list(data.tls_versions) if data.tls_versions is not None else None
    if data.given("alpn_protocols"):
        rules.check_alpn_protocols(data.alpn_protocols)
        protocols = data.alpn_protocols
        row.alpn_protocols = list(protocols) if protocols is not None else None
    if data.given("tls_ciphers"):
        row.tls_ciphers = data.tls_ciphers
    if row.tls_enabled:
        _fill_tls_defaults(row)  # null means the default for a re-encrypting pool


def _apply_update(
    services: ApiServices, lb: LoadBalancerRow, row: PoolRow, body: PoolUpdateBody
) -> None:
    data = body.pool
    for name in ("name", "description"):
        if data.given(name):
            setattr(row, name, getattr(data, name))
    if data.given("admin_state_up"):
        row.admin_state_up = bool(data.admin_state_up)
    if data.given("lb_algorithm"):
        if data.lb_algorithm is None:
            raise InvalidInput("None is not a valid option for lb_algorithm")
        require_capability(
            services, lb.provider, "lb_algorithm", data.lb_algorithm, "lb_algorithms"
        )
        row.lb_algorithm = data.lb_algorithm.value
    if data.given("session_persistence"):
        _update_persistence(services, lb.provider, row, body)
    _update_tls(row, body)


@router.put("/lbaas/pools/{pool_id}")
def update_pool(
    pool_id: str,
    body: PoolUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    now = utcnow()
    with services.database.write() as session:
        row = get_pool(session, ctx, pool_id, Rule.WRITE)
        lb = lock_loadbalancer_for_child(session, row.loadbalancer_id)
        session.refresh(row)
        _apply_update(services, lb, row, body)
        if body.pool.given("tags") and body.pool.tags is not None:
            set_tags(session, row.id, body.pool.tags)
        listeners = pool_queries.listeners_using_pool(session, row.id)
        mark([lb, *listeners, row], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = render_pool(session, row)
    services.notify()
    return {"pool": view}


@router.delete("/lbaas/pools/{pool_id}", status_code=204)
def delete_pool(
    pool_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    now = utcnow()
    with services.database.write() as session:
        row = get_pool(session, ctx, pool_id, Rule.WRITE)
        lb = lock_loadbalancer_for_child(session, row.loadbalancer_id)
        session.refresh(row)
        policies = queries.find_rows(session, L7PolicyRow, L7PolicyRow.redirect_pool_id == row.id)
        if policies:
            first = min(policies, key=lambda p: (p.created_at, p.id))
            raise Conflict(f"Pool {row.id} is in use by L7 policy {first.id}")
        listeners = pool_queries.listeners_using_pool(session, row.id)
        members = queries.find_rows(session, MemberRow, MemberRow.pool_id == row.id)
        monitors = queries.find_rows(session, HealthMonitorRow, HealthMonitorRow.pool_id == row.id)
        mark([lb, *listeners], PENDING_UPDATE, now)
        mark([row, *members, *monitors], PENDING_DELETE, now)
        enqueue(session, lb.id)
    services.notify()
    return Response(status_code=204)
