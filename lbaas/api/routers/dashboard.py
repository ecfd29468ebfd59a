"""``/dashboard``: the web dashboard, under the API's authentication and RBAC.

The page and its script carry no data. The data routes (``/dashboard/topology`` for the
first render, ``/dashboard/events`` for live updates) read the caller's identity exactly
as every API route does and show what ``GET /v2/lbaas/loadbalancers`` would list for them:
every project for an admin or a global observer, otherwise the caller's own project,
nothing at all (403) for a caller with no reader role. The page's actions are plain calls
of the API's own routes (member update, load balancer failover), so the policy that
refuses a reader there refuses them here too.

With ``auth_strategy = "keystone"`` the page logs people in: ``POST /dashboard/login``
(open, as the page is) exchanges a username and password for a project-scoped Keystone
token (``lbaas.identity.keystone_login``), which the page then sends as ``X-Auth-Token``
on every call, the event stream included (read with ``fetch``, which can send headers,
where ``EventSource`` cannot: no token ever goes in a URL, where access logs would keep
it). Under the other strategies the route does not exist.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.responses import JSONResponse, Response, StreamingResponse

from lbaas.api.deps import Call, get_call, get_services
from lbaas.api.services import ApiServices
from lbaas.dashboard.snapshot import read_snapshot
from lbaas.dashboard.stream import dashboard_events
from lbaas.dashboard.tracker import TopologyTracker
from lbaas.errors import Forbidden, NotFound, ServiceUnavailable, Unauthorized
from lbaas.identity.context import RequestContext
from lbaas.identity.keystone_login import Login, LoginRefused, issue_token
from lbaas.identity.keystone_tokens import KeystoneUnavailable
from lbaas.identity.policy import Rule, allowed, authorize

router = APIRouter(tags=["dashboard"])
_STATIC = resources.files("lbaas.dashboard") / "static"
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
LOGIN_REFUSED = "Keystone refused the login: check the user, password, project and domain."


def dashboard_scope(ctx: RequestContext) -> str | None:
    """The project whose objects the caller sees (``None``: all), as the list route's."""
    if allowed(ctx, Rule.READ_GLOBAL):
        return None
    if ctx.project_id is None:
        raise Forbidden()
    authorize(ctx, Rule.READ, ctx.project_id)
    return ctx.project_id


def _static(name: str) -> Response:
    path = _STATIC / name
    suffix = "." + name.rsplit(".", 1)[-1]
    if suffix not in _TYPES or not path.is_file():
        raise NotFound(f"{name} not found")
    # no-cache: a browser revalidates, so an upgrade's script is never mixed with an old page.
    headers = {"Cache-Control": "no-cache"}
    return Response(path.read_bytes(), media_type=_TYPES[suffix], headers=headers)


@router.get("/dashboard", include_in_schema=False)
def dashboard_page() -> Response:
    return _static("index.html")


@router.get("/dashboard/static/{name}", include_in_schema=False)
def dashboard_file(name: str) -> Response:
    return _static(name)


@router.get("/dashboard/topology", include_in_schema=False)
def dashboard_topology(call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    snapshot = read_snapshot(services.database, dashboard_scope(ctx))
    return {"loadbalancers": snapshot.topology, "listeners": snapshot.counters}


@router.get("/dashboard/events", include_in_schema=False)
async def dashboard_stream(request: Request, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    scope = dashboard_scope(ctx)  # refused (403) before the stream starts
    settings = services.settings.api
    events = dashboard_events(
        TopologyTracker(services.database, scope).tick,
        request.is_disconnected,
        settings.dashboard_update_interval,
        settings.dashboard_stream_seconds,
    )
    # X-Accel-Buffering: a proxy in front (nginx) must pass each event on as it comes.
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


class LoginForm(BaseModel):
    username: str = Field(min_length=1, max_length=255)
    password: str = Field(min_length=1, max_length=4096)
    project: str = Field(min_length=1, max_length=64)
    domain: str = Field("Default", min_length=1, max_length=64)


@router.post("/dashboard/login", include_in_schema=False)
def dashboard_login(form: LoginForm, services: ApiServices = Depends(get_services)) -> Response:
    if services.settings.api.auth_strategy != "keystone":
        raise NotFound("The dashboard logs in only with auth_strategy = keystone.")
    keystone = services.settings.keystone_authtoken
    login = Login(form.username, form.password, form.project, form.domain)
    try:
        issued = issue_token(keystone.auth_url, login, keystone.timeout)
    except LoginRefused:
        raise Unauthorized(LOGIN_REFUSED) from None
    except KeystoneUnavailable:
        raise ServiceUnavailable("The Keystone service is temporarily unavailable.") from None
    body = {
        "token": issued.token,
        "expires_at": issued.expires_at,
        "user": issued.user,
        "project": issued.project,
    }
    # no-store: a token is not for any cache between the browser and lbaas.
    return JSONResponse(body, headers={"Cache-Control": "no-store"})
