"""FastAPI dependencies: the services and the caller's context for each request."""

from __future__ import annotations

from starlette.requests import Request

from lbaas.api.context import RequestContext, build_context
from lbaas.api.services import ApiServices


def get_services(request: Request) -> ApiServices:
    services: ApiServices = request.app.state.services
    return services


def get_context(request: Request) -> RequestContext:
    services = get_services(request)
    request_id = getattr(request.state, "request_id", "")
    return build_context(request, services.settings.api, request_id)
