"""``/metrics`` (``api.metrics_enabled``): Prometheus' text format, no authentication —
expose it only where the scraper is, as with any exporter."""

from __future__ import annotations

from fastapi import APIRouter, Request
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.responses import Response

router = APIRouter(tags=["metrics"])


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    # A plain ``def``: the database reads of a scrape run in the thread pool, off the
    # event loop.
    return Response(request.app.state.metrics_page.render(), media_type=CONTENT_TYPE_LATEST)
