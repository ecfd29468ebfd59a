"""``/v2/lbaas/pools/{pool_id}/members``: CRUD and the batch update.

Members live under their pool: a pool that does not exist is a 404 whatever follows, and
a member of another pool is not found either. Every write needs the pool ACTIVE as well as
its load balancer, and moves the load balancer, the listeners using the pool and the pool
to PENDING_UPDATE (``lock_pool_for_child``). ``build_member`` is the validated row
constructor shared with the single-call load balancer create.

The batch update (``PUT …/members``) makes the pool's member set equal to the request,
matching members by (address, protocol_port): unknown ones are created, known ones are
updated (omitted fields take their POST defaults; name, tags and subnet are kept), and
those not named are deleted unless ``additive_only`` is true. It answers 202 with no body.
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.context import RequestContext
from lbaas.api.deps import get_context, get_services
from lbaas.api.listing import TRUE_WORDS, list_page, parse_list_params, select_fields
from lbaas.api.policy import Rule, authorize
from lbaas.api.quota import check_quota
from lbaas.api.routers.pools import find_pool, get_pool, has_live_monitor, lock_pool_for_child
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.member import (
    DEFAULT_WEIGHT,
    MemberCreate,
    MemberCreateBody,
    MembersBatchBody,
    MemberSingleCreate,
    MemberUpdateBody,
)
from lbaas.api.services import ApiServices
from lbaas.api.views.member import render_member, render_members
from lbaas.api.writes import PENDING_CREATE, PENDING_DELETE, PENDING_UPDATE, enqueue, mark, utcnow
from lbaas.db import network_repo, queries
from lbaas.db.listing import ListSpec, add_tags, set_tags
from lbaas.db.session import Session
from lbaas.db.tables import FlavorProfileRow, FlavorRow, LoadBalancerRow, MemberRow, PoolRow
from lbaas.errors import Conflict, InvalidInput, NotFound, ValidationFailure
from lbaas.model.enums import OperatingStatus

router = APIRouter(route_class=JsonRoute, tags=["members"])
T = MemberRow
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
        "address": T.address,
        "protocol_port": T.protocol_port,
        "weight": T.weight,
        "backup": T.backup,
        "subnet_id": T.subnet_id,
        "monitor_address": T.monitor_address,
        "monitor_port": T.monitor_port,
        "vnic_type": T.vnic_type,
        "created_at": T.created_at,
        "updated_at": T.updated_at,
    },
    id_column=T.id,
    created_column=T.created_at,
)


# -- building a member ------------------------------------------------------------------------


def _check_address(services: ApiServices, address: str) -> None:
    wanted = ipaddress.ip_address(address)
    reserved = services.settings.network.reserved_member_addresses
    if any(ipaddress.ip_address(r) == wanted for r in reserved):
        raise InvalidInput(f"{address} is not a valid option for member address")


def _check_subnet(session: Session, subnet_id: str | None) -> None:
    if subnet_id is not None and network_repo.get_subnet(session, subnet_id) is None:
        raise InvalidInput(f"Subnet {subnet_id} not found.")


def _flavor_allows_sriov(session: Session, lb: LoadBalancerRow | None) -> bool:
    flavor = session.get(FlavorRow, lb.flavor_id) if lb is not None and lb.flavor_id else None
    profile = session.get(FlavorProfileRow, flavor.flavor_profile_id) if flavor else None
    if profile is None:
        return False
    try:
        data = json.loads(profile.flavor_data)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("allow_member_sriov") is True


def _check_unique(session: Session, pool_id: str, address: str, port: int) -> None:
    clash = queries.find_rows(
        session,
        MemberRow,
        MemberRow.pool_id == pool_id,
        MemberRow.address == address,
        MemberRow.protocol_port == port,
    )
    if clash:
        raise Conflict(
            f"Another member on this pool is already using ip {address} on protocol_port {port}"
        )


def build_member(
    session: Session,
    services: ApiServices,
    pool: PoolRow,
    data: MemberSingleCreate,
    now: datetime,
    *,
    has_monitor: bool,
    known_unique: bool = False,
) -> MemberRow:
    """Validate a new member of ``pool`` and add it (PENDING_CREATE).

    It starts OFFLINE when the pool has a health monitor, else NO_MONITOR. No lock,
    quota, job or notification here. ``known_unique``: the caller has already compared
    the address and port with the pool's members (a batch does it once for all of them,
    instead of one query — and one autoflush — per member).
    """
    _check_address(services, data.address)
    _check_subnet(session, data.subnet_id)
    vnic_type = "normal"
    if data.request_sriov:
        if not _flavor_allows_sriov(session, session.get(LoadBalancerRow, pool.loadbalancer_id)):
            raise ValidationFailure("The load balancer flavor does not allow SR-IOV member ports.")
        vnic_type = "direct"
    if not known_unique:
        _check_unique(session, pool.id, data.address, data.protocol_port)
    status = OperatingStatus.OFFLINE if has_monitor else OperatingStatus.NO_MONITOR
    row = MemberRow(
        id=str(uuid.uuid4()),
        pool_id=pool.id,
        project_id=pool.project_id,
        name=data.name,
        admin_state_up=data.admin_state_up,
        address=data.address,
        protocol_port=data.protocol_port,
        weight=data.weight,
        backup=data.backup,
        subnet_id=data.subnet_id,
        monitor_address=data.monitor_address,
        monitor_port=data.monitor_port,
        vnic_type=vnic_type,
        provisioning_status=PENDING_CREATE,
        operating_status=status.value,
        created_at=now,
    )
    session.add(row)
    add_tags(session, row.id, data.tags or [])
    return row


def _get_member(session: Session, pool: PoolRow, member_id: str) -> MemberRow:
    row: MemberRow | None = session.get(MemberRow, member_id)
    if row is None or row.pool_id != pool.id or row.provisioning_status == "DELETED":
        raise NotFound.of("Member", member_id)
    return row


def _pool_and_member(
    session: Session, ctx: RequestContext, pool_id: str, member_id: str, rule: Rule
) -> tuple[PoolRow, MemberRow]:
    pool = find_pool(session, pool_id)
    member = _get_member(session, pool, member_id)
    authorize(ctx, rule, pool.project_id)
    return pool, member


# -- routes -------------------------------------------------------------------------------------


@router.get("/lbaas/pools/{pool_id}/members")
def list_members(
    pool_id: str,
    request: Request,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    params = parse_list_params(
        request,
        SPEC,
        services.settings.api.pagination_max_limit,
        bool_filters=frozenset({"admin_state_up", "backup"}),
        int_filters=frozenset({"protocol_port", "weight", "monitor_port"}),
    )
    with services.database.read() as session:
        pool = get_pool(session, ctx, pool_id, Rule.READ_MEMBERS)
        return list_page(
            session,
            request,
            SPEC,
            params,
            render_members,
            "members",
            "members_links",
            services.settings.api.api_base_uri,
            [T.pool_id == pool.id, T.provisioning_status != "DELETED"],
        )


@router.post("/lbaas/pools/{pool_id}/members", status_code=201)
def create_member(
    pool_id: str,
    body: MemberCreateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> JSONResponse:
    now = utcnow()
    with services.database.write() as session:
        pool = get_pool(session, ctx, pool_id, Rule.WRITE)
        lb, listeners = lock_pool_for_child(session, pool)
        check_quota(session, services.settings.quota, pool.project_id, "member")
        row = build_member(
            session,
            services,
            pool,
            body.member,
            now,
            has_monitor=has_live_monitor(session, pool.id),
        )
        mark([lb, *listeners, pool], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = render_member(session, row)
    services.notify()
    return JSONResponse({"member": view}, status_code=201)


@router.get("/lbaas/pools/{pool_id}/members/{member_id}")
def show_member(
    pool_id: str,
    member_id: str,
    fields: list[str] = Query(default=[]),
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    with services.database.read() as session:
        _, row = _pool_and_member(session, ctx, pool_id, member_id, Rule.READ)
        return {"member": select_fields(render_member(session, row), fields)}


@router.put("/lbaas/pools/{pool_id}/members/{member_id}")
def update_member(
    pool_id: str,
    member_id: str,
    body: MemberUpdateBody,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> dict[str, Any]:
    data = body.member
    now = utcnow()
    with services.database.write() as session:
        pool, row = _pool_and_member(session, ctx, pool_id, member_id, Rule.WRITE)
        lb, listeners = lock_pool_for_child(session, pool)
        session.refresh(row)
        for name in ("name", "monitor_address", "monitor_port"):
            if data.given(name):
                setattr(row, name, getattr(data, name))
        if data.given("admin_state_up"):
            row.admin_state_up = bool(data.admin_state_up)
        if data.given("weight"):
            row.weight = DEFAULT_WEIGHT if data.weight is None else data.weight
        if data.given("backup"):
            row.backup = bool(data.backup)
        if data.given("tags") and data.tags is not None:
            set_tags(session, row.id, data.tags)
        mark([lb, *listeners, pool, row], PENDING_UPDATE, now)
        enqueue(session, lb.id)
        session.flush()
        view = render_member(session, row)
    services.notify()
    return {"member": view}


@router.delete("/lbaas/pools/{pool_id}/members/{member_id}", status_code=204)
def delete_member(
    pool_id: str,
    member_id: str,
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    now = utcnow()
    with services.database.write() as session:
        pool, row = _pool_and_member(session, ctx, pool_id, member_id, Rule.WRITE)
        lb, listeners = lock_pool_for_child(session, pool)
        session.refresh(row)
        mark([lb, *listeners, pool], PENDING_UPDATE, now)
        mark([row], PENDING_DELETE, now)
        enqueue(session, lb.id)
    services.notify()
    return Response(status_code=204)


# -- batch update -------------------------------------------------------------------------------


def _replace_fields(session: Session, row: MemberRow, item: MemberCreate) -> None:
    """A member named again in a batch: omitted fields take their POST defaults."""
    row.weight = item.weight
    row.admin_state_up = item.admin_state_up
    row.backup = item.backup
    row.monitor_address = item.monitor_address
    row.monitor_port = item.monitor_port
    if item.given("name"):
        row.name = item.name
    if item.given("subnet_id"):
        row.subnet_id = item.subnet_id
    if item.given("tags") and item.tags is not None:
        set_tags(session, row.id, item.tags)


@router.put("/lbaas/pools/{pool_id}/members", status_code=202)
def batch_update_members(
    pool_id: str,
    body: MembersBatchBody,
    additive_only: str = "false",
    services: ApiServices = Depends(get_services),
    ctx: RequestContext = Depends(get_context),
) -> Response:
    additive = additive_only.strip().lower() in TRUE_WORDS
    now = utcnow()
    changed = False
    with services.database.write() as session:
        # Creating, updating and (unless additive) deleting all need the write rule.
        pool = get_pool(session, ctx, pool_id, Rule.WRITE)
        keys = [(m.address, m.protocol_port) for m in body.members]
        if len(set(keys)) != len(keys):
            raise ValidationFailure("Member must be updated only once in the same request.")
        for item in body.members:
            _check_subnet(session, item.subnet_id)
        lb, listeners = lock_pool_for_child(session, pool)
        existing = {
            (m.address, m.protocol_port): m
            for m in queries.find_rows(session, MemberRow, MemberRow.pool_id == pool.id)
        }
        new = [m for m, key in zip(body.members, keys, strict=True) if key not in existing]
        kept = [
            (existing[key], m) for m, key in zip(body.members, keys, strict=True) if key in existing
        ]
        wanted = set(keys)
        gone = [] if additive else [row for key, row in existing.items() if key not in wanted]
        if new or kept or gone:
            changed = True
            check_quota(
                session, services.settings.quota, pool.project_id, "member", len(new) - len(gone)
            )
            monitored = has_live_monitor(session, pool.id)
            for item in new:
                build_member(
                    session, services, pool, item, now, has_monitor=monitored, known_unique=True
                )
            for row, item in kept:
                _replace_fields(session, row, item)
            mark([row for row, _ in kept], PENDING_UPDATE, now)
            mark(gone, PENDING_DELETE, now)
            mark([lb, *listeners, pool], PENDING_UPDATE, now)
            enqueue(session, lb.id)
    if changed:
        services.notify()
    return Response(status_code=202)
