"""``/v2/lbaas/loadbalancers``: CRUD, cascade delete, stats, status tree and failover."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api import graph_create
from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import list_page, list_page_json, parse_list_params, select_fields
from lbaas.api.policy import Rule, authorize
from lbaas.api.quota import check_quota
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.loadbalancer import LoadBalancerCreateBody, LoadBalancerUpdateBody
from lbaas.api.scoping import list_scope
from lbaas.api.services import ApiServices
from lbaas.api.views.loadbalancer import loadbalancer_view, render_loadbalancers
from lbaas.api.views.status_tree import status_tree
from lbaas.api.writes import (
    ACTIVE,
    PENDING_CREATE,
    PENDING_DELETE,
    PENDING_UPDATE,
    enqueue,
    mark,
    require_lb_state,
    utcnow,
)
from lbaas.db import job_queue, stats_repo
from lbaas.db.listing import ListSpec, add_tags, set_tags
from lbaas.db.loadbalancer_json import list_loadbalancers_json
from lbaas.db.session import Session
from lbaas.db.tables import AvailabilityZoneRow, FlavorProfileRow, FlavorRow, LoadBalancerRow
from lbaas.db.tree_loader import load_tree
from lbaas.errors import InvalidInput, NotFound, ValidationFailure
from lbaas.model.enums import OperatingStatus
from lbaas.network.allocation import VipRequest, allocate_vip

router = APIRouter(route_class=JsonRoute, tags=["loadbalancers"])
T = LoadBalancerRow
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
        "vip_address": T.vip_address,
        "vip_port_id": T.vip_port_id,
        "vip_subnet_id": T.vip_subnet_id,
        "vip_network_id": T.vip_network_id,
        "vip_qos_policy_id": T.vip_qos_policy_id,
        "provider": T.provider,
        "flavor_id": T.flavor_id,
        "availability_zone": T.availability_zone,
        "created_at": T.created_at,
        "updated_at": T.updated_at,
    },
    id_column=T.id,
    created_column=T.created_at,
    plain_rows=True,
)


def get_loadbalancer(
    session: Session, ctx: RequestContext, lb_id: str, rule: Rule
) -> LoadBalancerRow:
    """The visible load balancer or 404; then 403 unless the caller passes ``rule``."""
    row = session.get(LoadBalancerRow, lb_id)
    if row is None or row.provisioning_status == "DELETED":
        raise NotFound.of("Load Balancer", lb_id)
    authorize(ctx, rule, row.project_id)
    return row


def _one(session: Session, row: LoadBalancerRow) -> dict[str, Any]:
    return render_loadbalancers(session, [row])[0]


@router.get("/lbaas/loadbalancers", response_model=None)
def list_loadbalancers(
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any] | Response:
    params = parse_list_params(
        request,
        SPEC,
        services.settings.api.pagination_max_limit,
        bool_filters=frozenset({"admin_state_up"}),
    )
    scope = list_scope(request, ctx, T.project_id)
    conditions = [T.provisioning_status != "DELETED", *scope]
    base_uri = services.settings.api.api_base_uri
    collection, links = "loadbalancers", "loadbalancers_links"
    if not params.fields:
        # The database renders each object (see lbaas/db/loadbalancer_json.py).
        with services.database.read_connection() as conn:
            return list_page_json(
                conn,
                request,
                SPEC,
                params,
                list_loadbalancers_json,
                collection,
                links,
                base_uri,
                conditions,
            )
    with services.database.read() as session:
        return list_page(
            session,
            request,
            SPEC,
            params,
            render_loadbalancers,
            collection,
            links,
            base_uri,
            conditions,
        )


def _resolve_provider(
    session: Session, services: ApiServices, requested: str | None, flavor_id: str | None
) -> str:
    provider = requested
    if flavor_id is not None:
        flavor = session.get(FlavorRow, flavor_id)
        if flavor is None or flavor_id == "00000000-0000-0000-0000-000000000000":
            raise ValidationFailure("Invalid flavor_id.")
        if not flavor.enabled:
            raise InvalidInput(
                f"The selected flavor is not allowed in this deployment: {flavor_id}"
            )
        profile = session.get(FlavorProfileRow, flavor.flavor_profile_id)
        flavor_provider = profile.provider_name if profile is not None else None
        if (
            provider is not None
            and flavor_provider is not None
            and services.providers.resolve(provider) != services.providers.resolve(flavor_provider)
        ):
            raise InvalidInput(f"Flavor '{flavor_id}' is not compatible with provider '{provider}'")
        provider = provider or flavor_provider
    provider = provider or services.providers.default
    canonical = services.providers.resolve(provider)
    if canonical is None:
        raise InvalidInput(f"Provider '{provider}' is not enabled.")
    return canonical


def _check_availability_zone(session: Session, name: str | None) -> None:
    if name is None:
        return
    zone = session.get(AvailabilityZoneRow, name)
    if zone is None:
        raise ValidationFailure("Invalid availability zone.")
    if not zone.enabled:
        raise InvalidInput(
            f"The selected availability_zone is not allowed in this deployment: {name}"
        )


@router.post("/lbaas/loadbalancers", status_code=201)
def create_loadbalancer(
    body: LoadBalancerCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    data = body.loadbalancer
    project = data.project_id or data.tenant_id or ctx.project_id
    if project is None:
        raise ValidationFailure(
            "Missing project ID in request where one is required. An administrator should "
            "check the keystone settings in the Octavia configuration."
        )
    authorize(ctx, Rule.WRITE, project)
    if data.vip_qos_policy_id is not None:
        raise InvalidInput("VIP QoS policy is not allowed in this deployment.")
    for sg in data.vip_sg_ids or []:
        raise InvalidInput(f"Security Group {sg} not found.")
    now = utcnow()
    with services.database.write() as session:
        provider = _resolve_provider(session, services, data.provider, data.flavor_id)
        _check_availability_zone(session, data.availability_zone)
        check_quota(session, services.settings.quota, project, "loadbalancer")
        row = LoadBalancerRow(
            id=graph_create.new_id(),
            project_id=project,
            name=data.name,
            description=data.description,
            admin_state_up=data.admin_state_up,
            provisioning_status=PENDING_CREATE,
            operating_status=OperatingStatus.OFFLINE.value,
            provider=provider,
            flavor_id=data.flavor_id,
            availability_zone=data.availability_zone,
            vip_sg_ids=[],
            additional_vips=[],
            created_at=now,
        )
        vip = allocate_vip(
            session,
            VipRequest(data.vip_port_id, data.vip_network_id, data.vip_subnet_id, data.vip_address),
            row.id,
            now,
        )
        row.vip_address, row.vip_subnet_id = vip.address, vip.subnet_id
        row.vip_network_id, row.vip_port_id = vip.network_id, vip.port_id
        row.additional_vips = graph_create.allocate_additional_vips(
            session, data.additional_vips or [], vip, row.id, now
        )
        session.add(row)
        session.flush()
        add_tags(session, row.id, data.tags or [])
        full = None
        if data.listeners or data.pools:
            full = graph_create.create_children(
                session, services, ctx, row, data.listeners or [], data.pools or [], now
            )
        enqueue(session, row.id, new=True)
        session.flush()
        # A new load balancer's children are the ones just created: no need to query them.
        view = loadbalancer_view(row, [], [], sorted(set(data.tags or [])))
        if full is not None:
            view.update(full)
    services.notify()
    return JSONResponse({"loadbalancer": view}, status_code=201)


@router.get("/lbaas/loadbalancers/{lb_id}")
def show_loadbalancer(
    lb_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        row = get_loadbalancer(session, ctx, lb_id, Rule.READ)
        return {"loadbalancer": select_fields(_one(session, row), fields)}


@router.put("/lbaas/loadbalancers/{lb_id}")
def update_loadbalancer(
    lb_id: str,
    body: LoadBalancerUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    data = body.loadbalancer
    if data.given("vip_qos_policy_id") and data.vip_qos_policy_id is not None:
        raise InvalidInput("VIP QoS policy is not allowed in this deployment.")
    for sg in data.vip_sg_ids or []:
        raise InvalidInput(f"Security Group {sg} not found.")
    now = utcnow()
    with services.database.write() as session:
        row = get_loadbalancer(session, ctx, lb_id, Rule.WRITE)
        session.refresh(row, with_for_update=True)
        require_lb_state(row, ACTIVE)
        for name in ("name", "description"):
            if data.given(name):
                setattr(row, name, getattr(data, name))
        if data.given("admin_state_up"):
            row.admin_state_up = bool(data.admin_state_up)
        if data.given("vip_qos_policy_id"):
            row.vip_qos_policy_id = None
        if data.given("vip_sg_ids"):
            row.vip_sg_ids = []
        if data.given("tags") and data.tags is not None:
            set_tags(session, row.id, data.tags)
        mark([row], PENDING_UPDATE, now)
        enqueue(session, row.id)
        session.flush()
        view = _one(session, row)
    services.notify()
    return {"loadbalancer": view}


@router.delete("/lbaas/loadbalancers/{lb_id}", status_code=204)
def delete_loadbalancer(
    lb_id: str,
    cascade: str = "false",
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    now = utcnow()
    with services.database.write() as session:
        row = get_loadbalancer(session, ctx, lb_id, Rule.WRITE)
        session.refresh(row, with_for_update=True)
        require_lb_state(row, ACTIVE, "ERROR")
        tree = load_tree(session.connection(), lb_id)
        has_children = tree is not None and bool(tree.listeners or tree.pools)
        if has_children and cascade.strip().lower() not in ("true", "1", "yes", "on", "y", "t"):
            raise ValidationFailure(f"Cannot delete Load Balancer {lb_id} - it has children")
        mark([row], PENDING_DELETE, now)
        enqueue(session, row.id)
    services.notify()
    return Response(status_code=204)


@router.get("/lbaas/loadbalancers/{lb_id}/stats")
def loadbalancer_stats(
    lb_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        row = get_loadbalancer(session, ctx, lb_id, Rule.READ)
        tree = load_tree(session.connection(), row.id)
        listener_ids = [li.id for li in tree.listeners] if tree is not None else []
        per_listener = stats_repo.listener_totals(session, listener_ids)
    total = dict.fromkeys(stats_repo.COUNTERS, 0)
    for counters in per_listener.values():
        for name, value in counters.items():
            total[name] += value
    return {"stats": total}


@router.get("/lbaas/loadbalancers/{lb_id}/status")
@router.get("/lbaas/loadbalancers/{lb_id}/statuses", include_in_schema=False)
def loadbalancer_status(
    lb_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        get_loadbalancer(session, ctx, lb_id, Rule.READ)
        tree = load_tree(session.connection(), lb_id)
        assert tree is not None
        return {"statuses": {"loadbalancer": status_tree(tree)}}


@router.put("/lbaas/loadbalancers/{lb_id}/failover", status_code=202)
def failover_loadbalancer(
    lb_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    with services.database.write() as session:
        row = get_loadbalancer(session, ctx, lb_id, Rule.ADMIN)
        session.refresh(row, with_for_update=True)
        require_lb_state(row, ACTIVE, "ERROR")
        mark([row], PENDING_UPDATE, utcnow())
        enqueue(session, row.id, rebuild=True)
    services.notify()
    return Response(status_code=202)


@router.get("/lbaas/loadbalancers/{lb_id}/converge_status")
def converge_status(
    lb_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    """lbaas extension: the converge job of a load balancer and its last error."""
    with services.database.read() as session:
        row = get_loadbalancer(session, ctx, lb_id, Rule.READ)
        job = job_queue.last_error(session, row.id)
    error, requested, done = job if job is not None else (None, 0, 0)
    return {
        "converge_status": {
            "loadbalancer_id": lb_id,
            "provisioning_status": row.provisioning_status,
            "pending": requested > done,
            "last_error": error,
        }
    }
