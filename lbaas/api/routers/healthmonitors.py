"""``/v2/lbaas/healthmonitors``: CRUD of the one health monitor a pool may have.

A monitor's writes lock like a member's (pool and load balancer ACTIVE; load balancer,
listeners using the pool and the pool go PENDING_UPDATE). Deleting a monitor leaves the
pool's members unobserved, so they become NO_MONITOR in the same transaction rather than
whenever health reports stop.
Rows are built in ``builders.healthmonitor``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from lbaas.api.builders.healthmonitor import apply_healthmonitor_update, build_healthmonitor
from lbaas.api.lookups import find_pool, get_pool, get_visible
from lbaas.api.quota import check_quota
from lbaas.api.read_routes import Listing, add_list_route, add_show_route, tree_conditions
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.healthmonitor import (
    HealthMonitorCreate,
    HealthMonitorCreateBody,
    HealthMonitorUpdate,
    HealthMonitorUpdateBody,
)
from lbaas.api.validation import healthmonitor as rules
from lbaas.api.views.healthmonitor import render_healthmonitor, render_healthmonitors
from lbaas.api.write_routes import add_create_route, add_delete_route, add_update_route
from lbaas.api.writes import TreeWrite
from lbaas.db.listing import derived_spec
from lbaas.db.loadbalancers import pool_repo
from lbaas.db.session import Session
from lbaas.db.tables import HealthMonitorRow, PoolRow
from lbaas.errors import InvalidInput
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule
from lbaas.model.enums import OperatingStatus

router = APIRouter(route_class=JsonRoute, tags=["healthmonitors"])
T = HealthMonitorRow
# http_version is a float column: a sort key, but filtered below rather than as text.
SPEC = derived_spec(T, aliases={"tenant_id": "project_id"})
_LIVE_OF_CALLER = tree_conditions(SPEC)


def _monitor_and_pool(
    session: Session, ctx: RequestContext, hm_id: str, rule: Rule
) -> tuple[HealthMonitorRow, PoolRow]:
    row = get_visible(session, ctx, HealthMonitorRow, hm_id, "Health Monitor", rule)
    return row, find_pool(session, row.pool_id)


def _conditions(session: Session, request: Request, ctx: RequestContext, _: Any) -> list[Any]:
    raw = request.query_params.get("http_version")
    version = []
    if raw is not None:
        try:
            version = [T.http_version == float(raw)]
        except ValueError:
            raise InvalidInput("One or more arguments are either duplicate or invalid") from None
    return [*_LIVE_OF_CALLER(session, request, ctx, None), *version]


add_list_route(
    router,
    "/lbaas/healthmonitors",
    Listing(
        SPEC,
        render_healthmonitors,
        "healthmonitors",
        extra_allowed=frozenset({"http_version"}),
    ),
    _conditions,
)


def _create(w: TreeWrite, ctx: RequestContext, data: HealthMonitorCreate) -> HealthMonitorRow:
    pool = get_pool(w.session, ctx, data.pool_id, Rule.WRITE)
    lb, listeners = w.lock_pool(pool)
    check_quota(w.session, w.services.settings.quota, pool.project_id, "healthmonitor")
    row = build_healthmonitor(w.session, w.services, pool, data, w.now)
    w.changed(lb, update=[*listeners, pool])
    return row


add_create_route(
    router,
    "/lbaas/healthmonitors",
    "healthmonitor",
    HealthMonitorCreateBody,
    _create,
    render_healthmonitor,
)


def _monitor(session: Session, ctx: RequestContext, hm_id: str, rule: Rule) -> HealthMonitorRow:
    return _monitor_and_pool(session, ctx, hm_id, rule)[0]


_ITEM = "/lbaas/healthmonitors/{hm_id}"
add_show_route(router, _ITEM, "healthmonitor", _monitor, render_healthmonitor)


def _update(
    w: TreeWrite, ctx: RequestContext, hm_id: str, data: HealthMonitorUpdate
) -> HealthMonitorRow:
    row, pool = _monitor_and_pool(w.session, ctx, hm_id, Rule.WRITE)
    rules.check_http_fields_on_update(row.type, data.model_fields_set)
    rules.check_required_on_update({n: getattr(data, n) for n in data.model_fields_set})
    lb, listeners = w.lock_pool(pool, row)
    apply_healthmonitor_update(w.session, w.services, row, data)
    w.changed(lb, update=[*listeners, pool, row])
    return row


def _delete(w: TreeWrite, ctx: RequestContext, hm_id: str) -> None:
    row, pool = _monitor_and_pool(w.session, ctx, hm_id, Rule.WRITE)
    lb, listeners = w.lock_pool(pool, row)
    w.changed(lb, update=[*listeners, pool], delete=[row])
    unobserved = OperatingStatus.NO_MONITOR.value
    for member in pool_repo.members_of_pool(w.session, pool.id):
        if member.operating_status != unobserved:
            member.operating_status = unobserved
            member.updated_at = w.now


add_update_route(
    router, _ITEM, "healthmonitor", HealthMonitorUpdateBody, _update, render_healthmonitor
)
add_delete_route(router, _ITEM, "healthmonitor", _delete)
