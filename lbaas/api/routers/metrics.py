"""``/metrics`` (``api.metrics_enabled``): Prometheus' text format, no authentication —
expose it only where the scraper is, as with any exporter."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Request
from starlette.responses import PlainTextResponse

from lbaas.api.deps import get_services
from lbaas.api.metrics import RequestCounter, render_metrics
from lbaas.api.services import ApiServices
from lbaas.db.metrics_queries import control_plane_counts

router = APIRouter(tags=["metrics"])

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request, services: ApiServices = Depends(get_services)) -> PlainTextResponse:
    with services.database.read_connection() as conn:
        state = control_plane_counts(conn, time.time())
    requests: RequestCounter = request.app.state.request_counter
    return PlainTextResponse(render_metrics(state, requests), media_type=CONTENT_TYPE)
