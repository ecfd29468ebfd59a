"""``/healthcheck``: is this API process able to serve? (``api.healthcheck_enabled``)

What a load balancer in front of several ``lbaas api`` processes probes. Like Octavia's it
is plain text, not JSON, answers GET and HEAD only, and needs no authentication; "able to
serve" means the database answers, since no request can do anything without it.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.responses import PlainTextResponse, Response

from lbaas.api.deps import get_services
from lbaas.api.services import ApiServices
from lbaas.errors import ServiceUnavailable

router = APIRouter(tags=["healthcheck"])


@router.api_route("/healthcheck", methods=["GET", "HEAD"], include_in_schema=False)
def healthcheck(services: ApiServices = Depends(get_services)) -> Response:
    try:
        services.database.ping()
    except ServiceUnavailable as exc:
        return PlainTextResponse(exc.message, status_code=503)
    return PlainTextResponse("OK")
