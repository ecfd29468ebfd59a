"""``/v2/lbaas/pools/{pool_id}/members``: CRUD and the batch update.

Members live under their pool: a pool that does not exist is a 404 whatever follows, and
a member of another pool is not found either. Every write needs the pool ACTIVE as well as
its load balancer, and moves the load balancer, the listeners using the pool and the pool
to PENDING_UPDATE (``TreeWrite.lock_pool``). Rows are built in ``builders.member``.

The batch update (``PUT …/members``) makes the pool's member set equal to the request,
matching members by (address, protocol_port): unknown ones are created, known ones are
updated (omitted fields take their POST defaults; name, tags and subnet are kept), and
those not named are deleted unless ``additive_only`` is true. It answers 202 with no body.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse, Response

from lbaas.api.builders.member import apply_batch, apply_member_update, build_member, check_subnet
from lbaas.api.deps import Call, get_call
from lbaas.api.listing import TRUE_WORDS
from lbaas.api.lookups import find_pool, get_pool, has_live_monitor
from lbaas.api.quota import check_quota
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, live_children
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.member import (
    MemberCreateBody,
    MembersBatchBody,
    MemberUpdate,
    MemberUpdateBody,
)
from lbaas.api.views.member import render_member, render_members
from lbaas.api.write_routes import add_delete_route, add_update_route
from lbaas.api.writes import TreeWrite, tree_write
from lbaas.db.listing import derived_spec
from lbaas.db.session import Session
from lbaas.db.tables import MemberRow, PoolRow
from lbaas.errors import NotFound, ValidationFailure
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, authorize, check_given_id
from lbaas.model.enums import ProvisioningStatus

router = APIRouter(route_class=JsonRoute, tags=["members"])
SPEC = derived_spec(MemberRow, aliases={"tenant_id": "project_id"})
_DELETED = ProvisioningStatus.DELETED.value
_ITEM = "/lbaas/pools/{pool_id}/members/{member_id}"
_Key = tuple[str, str]  # (pool id, member id)


def _pool_and_member(
    session: Session, ctx: RequestContext, pool_id: str, member_id: str, rule: Rule
) -> tuple[PoolRow, MemberRow]:
    pool = find_pool(session, pool_id)
    member: MemberRow | None = session.get(MemberRow, member_id)
    if member is None or member.pool_id != pool.id or member.provisioning_status == _DELETED:
        raise NotFound.of("Member", member_id)
    authorize(ctx, rule, pool.project_id)
    return pool, member


add_list_route(
    router,
    "/lbaas/pools/{pool_id}/members",
    Listing(SPEC, render_members, "members"),
    live_children(get_pool, Rule.READ_MEMBERS, MemberRow, "pool_id"),
)


@router.post("/lbaas/pools/{pool_id}/members", status_code=201)
def create_member(
    pool_id: str, body: MemberCreateBody, call: Call = Depends(get_call)
) -> JSONResponse:
    services, ctx = call
    check_given_id(ctx, body.member)
    with tree_write(services) as w:
        pool = get_pool(w.session, ctx, pool_id, Rule.WRITE)
        lb, listeners = w.lock_pool(pool)
        check_quota(w.session, services.settings.quota, pool.project_id, "member")
        monitored = has_live_monitor(w.session, pool.id)
        row = build_member(w.session, services, pool, body.member, w.now, has_monitor=monitored)
        w.changed(lb, update=[*listeners, pool])
        view = w.view(render_member, row)
    return JSONResponse({"member": view}, status_code=201)


def _member(session: Session, ctx: RequestContext, key: _Key, rule: Rule) -> MemberRow:
    return _pool_and_member(session, ctx, *key, rule)[1]


def _update(w: TreeWrite, ctx: RequestContext, key: _Key, data: MemberUpdate) -> MemberRow:
    pool, row = _pool_and_member(w.session, ctx, *key, Rule.WRITE)
    lb, listeners = w.lock_pool(pool, row)
    apply_member_update(w.session, row, data)
    w.changed(lb, update=[*listeners, pool, row])
    return row


def _delete(w: TreeWrite, ctx: RequestContext, key: _Key) -> None:
    pool, row = _pool_and_member(w.session, ctx, *key, Rule.WRITE)
    lb, listeners = w.lock_pool(pool, row)
    w.changed(lb, update=[*listeners, pool], delete=[row])


add_show_route(router, _ITEM, "member", _member, render_member)
add_update_route(router, _ITEM, "member", MemberUpdateBody, _update, render_member)
add_delete_route(router, _ITEM, "member", _delete)


@router.put("/lbaas/pools/{pool_id}/members", status_code=202)
def batch_update_members(
    pool_id: str,
    body: MembersBatchBody,
    additive_only: str = "false",
    call: Call = Depends(get_call),
) -> Response:
    services, ctx = call
    for item in body.members:
        check_given_id(ctx, item)
    with tree_write(services) as w:
        # Creating, updating and (unless additive) deleting all need the write rule.
        pool = get_pool(w.session, ctx, pool_id, Rule.WRITE)
        keys = [(m.address, m.protocol_port) for m in body.members]
        if len(set(keys)) != len(keys):
            raise ValidationFailure("Member must be updated only once in the same request.")
        for item in body.members:
            check_subnet(w.session, item.subnet_id)
        apply_batch(w, services, pool, body, additive_only.strip().lower() in TRUE_WORDS)
    return Response(status_code=202)
