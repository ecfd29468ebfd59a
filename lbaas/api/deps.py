"""FastAPI dependencies: the services and the caller's context for each request.

They are ``async`` although they never await: FastAPI runs a plain ``def`` dependency in
its thread pool, and two extra thread hops per request (each waiting for the GIL behind
the worker threads) cost more than everything these functions do.
"""

from __future__ import annotations

from typing import NamedTuple

from fastapi import Depends
from starlette.requests import Request

from lbaas.api.metrics import route_template
from lbaas.api.services import ApiServices
from lbaas.identity.context import RequestContext, build_context


def services_of(request: Request) -> ApiServices:
    services: ApiServices = request.app.state.services
    return services


async def get_services(request: Request) -> ApiServices:
    return services_of(request)


async def get_context(request: Request) -> RequestContext:
    services = services_of(request)
    request_id = getattr(request.state, "request_id", "")
    route = route_template(request.scope)
    return build_context(request, services.settings.api, request_id, services.policy, route)


class Call(NamedTuple):
    """The services and the caller of one request, for handlers that pass both on."""

    services: ApiServices
    ctx: RequestContext


async def get_call(
    services: ApiServices = Depends(get_services), ctx: RequestContext = Depends(get_context)
) -> Call:
    return Call(services, ctx)
