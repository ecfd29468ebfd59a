"""``/v2/lbaas/loadbalancers``: CRUD, cascade delete, stats, status tree and failover."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.builders import graph_create
from lbaas.api.builders.loadbalancer import (
    apply_loadbalancer_update,
    authorized_project,
    build_loadbalancer,
    reject_unsupported_vip_options,
)
from lbaas.api.deps import Call, get_call
from lbaas.api.listing import (
    TRUE_WORDS,
    list_page,
    list_page_json,
    parse_list_params,
    select_fields,
)
from lbaas.api.lookups import DELETED, get_loadbalancer
from lbaas.api.read_routes import live_rows_of_caller
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.loadbalancer import (
    LoadBalancerCreateBody,
    LoadBalancerUpdate,
    LoadBalancerUpdateBody,
)
from lbaas.api.views.common import single
from lbaas.api.views.loadbalancer import loadbalancer_view, render_loadbalancers
from lbaas.api.views.status_tree import status_tree
from lbaas.api.write_routes import add_update_route
from lbaas.api.writes import ACTIVE, ERROR, PENDING_DELETE, TreeWrite, tree_write
from lbaas.db.health import stats_repo
from lbaas.db.jobs import job_queue
from lbaas.db.listing import derived_spec, typed_filters
from lbaas.db.loadbalancers.loadbalancer_json import (
    list_loadbalancers_json,
    loadbalancer_json_by_id,
)
from lbaas.db.loadbalancers.tree_loader import load_tree
from lbaas.db.tables import LoadBalancerRow
from lbaas.errors import NotFound, ValidationFailure
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, authorize, check_given_id

router = APIRouter(route_class=JsonRoute, tags=["loadbalancers"])
SPEC = derived_spec(
    LoadBalancerRow,
    aliases={"tenant_id": "project_id"},
    exclude={"topology"},
    plain_rows=True,
    constants={"vip_vnic_type": "normal"},
)
BOOL_FILTERS, INT_FILTERS = typed_filters(SPEC)


_one = single(render_loadbalancers)


@router.get("/lbaas/loadbalancers", response_model=None)
def list_loadbalancers(
    request: Request, call: Call = Depends(get_call)
) -> dict[str, Any] | Response:
    # Without ``fields=`` the database renders each object (``db/loadbalancers/loadbalancer_json.py``).
    services, ctx = call
    max_limit = services.settings.api.pagination_max_limit
    params = parse_list_params(
        request, SPEC, max_limit, bool_filters=BOOL_FILTERS, int_filters=INT_FILTERS
    )
    base_uri = services.settings.api.api_base_uri
    keys = ("loadbalancers", "loadbalancers_links")
    conditions = live_rows_of_caller(SPEC, request, ctx)
    if not params.fields:
        with services.database.read_connection() as conn:
            render = list_loadbalancers_json
            return list_page_json(conn, request, SPEC, params, render, *keys, base_uri, conditions)
    with services.database.read() as session:
        render_rows = render_loadbalancers
        return list_page(session, request, SPEC, params, render_rows, *keys, base_uri, conditions)


@router.post("/lbaas/loadbalancers", status_code=201)
def create_loadbalancer(
    body: LoadBalancerCreateBody, call: Call = Depends(get_call)
) -> JSONResponse:
    services, ctx = call
    data = body.loadbalancer
    check_given_id(ctx, data)
    project = authorized_project(ctx, data)
    with tree_write(services) as w:
        row = build_loadbalancer(w.session, services, project, data, w.now)
        full = None
        if data.listeners or data.pools:
            listeners, pools = data.listeners or [], data.pools or []
            full = graph_create.create_children(
                w.session, services, ctx, row, listeners, pools, w.now
            )
        w.created(row)
        w.session.flush()
        # A new load balancer's children are the ones just created: no need to query them.
        view = loadbalancer_view(row, [], [], sorted(set(data.tags or [])))
        if full is not None:
            view.update(full)
    return JSONResponse({"loadbalancer": view}, status_code=201)


_ITEM = "/lbaas/loadbalancers/{lb_id}"


@router.get(_ITEM, response_model=None)
def show_loadbalancer(
    lb_id: str, fields: list[str] = Query(default=[]), call: Call = Depends(get_call)
) -> dict[str, Any] | Response:
    # The database renders the object, as for lists; 404 before 403, as ``get_visible``.
    services, ctx = call
    with services.database.read_connection() as conn:
        found = loadbalancer_json_by_id(conn, lb_id)
    if found is None or found.provisioning_status == DELETED:
        raise NotFound.of("Load Balancer", lb_id)
    authorize(ctx, Rule.READ, found.project_id)
    if fields:
        return {"loadbalancer": select_fields(orjson.loads(found.json), fields)}
    body = b'{"loadbalancer":' + found.json.encode() + b"}"
    return Response(body, media_type="application/json")


def _update(
    w: TreeWrite, ctx: RequestContext, lb_id: str, data: LoadBalancerUpdate
) -> LoadBalancerRow:
    reject_unsupported_vip_options(
        data.vip_qos_policy_id if data.given("vip_qos_policy_id") else None
    )
    row = get_loadbalancer(w.session, ctx, lb_id, Rule.WRITE)
    w.lock_own(row, ACTIVE)
    apply_loadbalancer_update(w.session, w.services, row, data)
    w.changed(row)
    return row


add_update_route(router, _ITEM, "loadbalancer", LoadBalancerUpdateBody, _update, _one)


@router.delete("/lbaas/loadbalancers/{lb_id}", status_code=204)
def delete_loadbalancer(
    lb_id: str, cascade: str = "false", call: Call = Depends(get_call)
) -> Response:
    services, ctx = call
    with tree_write(services) as w:
        row = get_loadbalancer(w.session, ctx, lb_id, Rule.WRITE)
        w.lock_own(row, ACTIVE, ERROR)
        tree = load_tree(w.session.connection(), lb_id)
        has_children = tree is not None and bool(tree.listeners or tree.pools)
        if has_children and cascade.strip().lower() not in TRUE_WORDS:
            raise ValidationFailure(f"Cannot delete Load Balancer {lb_id} - it has children")
        w.changed(row, lb_status=PENDING_DELETE)
    return Response(status_code=204)


@router.get("/lbaas/loadbalancers/{lb_id}/stats")
def loadbalancer_stats(lb_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    with services.database.read() as session:
        row = get_loadbalancer(session, ctx, lb_id, Rule.READ)
        tree = load_tree(session.connection(), row.id)
        listener_ids = [li.id for li in tree.listeners] if tree is not None else []
        return {"stats": stats_repo.summed_totals(session, listener_ids)}


@router.get("/lbaas/loadbalancers/{lb_id}/status")
@router.get("/lbaas/loadbalancers/{lb_id}/statuses", include_in_schema=False)
def loadbalancer_status(lb_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    with services.database.read() as session:
        get_loadbalancer(session, ctx, lb_id, Rule.READ)
        tree = load_tree(session.connection(), lb_id)
        assert tree is not None
        return {"statuses": {"loadbalancer": status_tree(tree)}}


@router.put("/lbaas/loadbalancers/{lb_id}/failover", status_code=202)
def failover_loadbalancer(lb_id: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    with tree_write(services) as w:
        row = get_loadbalancer(w.session, ctx, lb_id, Rule.ADMIN)
        w.lock_own(row, ACTIVE, ERROR)
        w.changed(row, rebuild=True)
    return Response(status_code=202)


@router.get("/lbaas/loadbalancers/{lb_id}/converge_status")
def converge_status(lb_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    """lbaas extension: the converge job of a load balancer and its last error."""
    services, ctx = call
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
