"""``/v2/lbaas/quotas``: per-project limits, their defaults, and who may see or set them.

A project's limits are stored as one record whose columns are ``null`` where the
deployment default applies, so changing a default in the configuration moves every project
that never set its own value. Reads of one project return the *effective* limits (defaults
filled in); the list returns the records as stored, as Octavia does, leaving out those
with no limit set (the record enforcement creates, or one reset by DELETE). DELETE keeps
the record and clears every limit back to the default.

``/quotas/defaults`` is a real route here (Octavia serves it only by accident, as "the
quota of project ``defaults``"); it is declared before ``/quotas/{project_id}`` so the
path parameter cannot capture it. Enforcement lives in ``lbaas.api.quota``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.deps import Call, get_call
from lbaas.api.quota import KINDS
from lbaas.api.read_routes import Listing, add_list_route
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.quota import QuotaUpdateBody
from lbaas.api.scoping import list_scope
from lbaas.api.views.quota import default_limits, effective_limits, quota_view, render_quotas
from lbaas.db.listing import derived_spec
from lbaas.db.quotas import quota_repo
from lbaas.db.session import Session
from lbaas.db.tables import QuotaRow
from lbaas.errors import InvalidInput, NotFound
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, authorize

router = APIRouter(route_class=JsonRoute, tags=["quotas"])
T = QuotaRow
SPEC = derived_spec(T, aliases={"tenant_id": "project_id"}, tag_capable=False)
PROJECT_ID_MAX = 36


def _visible_quotas(_: Session, request: Request, ctx: RequestContext, __: Any) -> list[Any]:
    """The caller's scope, and only records that hold a limit of their own: the record the
    quota check creates for a project's first object (all ``null``) is not listed, as
    Octavia under noauth, which keeps no record until a limit is set, lists none."""
    scope = list_scope(request, ctx, T.project_id, global_rule=Rule.READ_QUOTA_GLOBAL)
    return [*scope, quota_repo.has_own_limit()]


add_list_route(
    router,
    "/lbaas/quotas",
    Listing(SPEC, render_quotas, "quotas"),
    _visible_quotas,
)


@router.get("/lbaas/quotas/defaults")
def show_deployment_defaults(call: Call = Depends(get_call)) -> dict[str, Any]:
    """The defaults, for anyone allowed to read their own project's quota. Octavia serves
    this path as the quota of a project named ``defaults`` (which has no record), so its
    ``project_id`` says ``defaults``."""
    services, ctx = call
    authorize(ctx, Rule.READ_QUOTA, ctx.project_id)
    return {"quota": quota_view("defaults", default_limits(services.settings.quota))}


@router.get("/lbaas/quotas/{project_id}/default")
def show_project_defaults(project_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    authorize(ctx, Rule.READ_QUOTA, project_id)
    return {"quota": quota_view(project_id, default_limits(services.settings.quota))}


@router.get("/lbaas/quotas/{project_id}")
def show_quota(project_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    authorize(ctx, Rule.READ_QUOTA, project_id)
    with services.database.read() as session:
        row = session.get(QuotaRow, project_id)
        limits = effective_limits(row, services.settings.quota)
    return {"quota": quota_view(project_id, limits)}


@router.put("/lbaas/quotas/{project_id}", status_code=202)
def update_quota(
    project_id: str, body: QuotaUpdateBody, call: Call = Depends(get_call)
) -> JSONResponse:
    services, ctx = call
    authorize(ctx, Rule.WRITE_QUOTA, project_id)
    if len(project_id) > PROJECT_ID_MAX:
        raise InvalidInput(
            f"Invalid input for field/attribute project_id. Value: '{project_id}'. "
            f"Value should have a maximum character requirement of {PROJECT_ID_MAX}"
        )
    with services.database.write() as session:
        row = session.get(QuotaRow, project_id, with_for_update=True)
        if row is None:
            row = QuotaRow(project_id=project_id)
            session.add(row)
        for kind, limit in body.quota.limits().items():
            setattr(row, kind, limit)
        session.flush()
        limits = effective_limits(row, services.settings.quota)
    return JSONResponse({"quota": quota_view(project_id, limits)}, status_code=202)


@router.delete("/lbaas/quotas/{project_id}", status_code=202)
def reset_quota(project_id: str, call: Call = Depends(get_call)) -> Response:
    """Every limit of the project back to the default; the record itself stays."""
    services, ctx = call
    authorize(ctx, Rule.WRITE_QUOTA, project_id)
    with services.database.write() as session:
        row = session.get(QuotaRow, project_id, with_for_update=True)
        if row is None:
            raise NotFound.of("Quotas", project_id)
        for kind in KINDS:
            setattr(row, kind, None)
    return Response(status_code=202)
