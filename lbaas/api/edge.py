"""The edge of the HTTP surface: one small ASGI middleware for Octavia's conventions.

Done once here instead of in every handler: ``/v2.0/...`` served as ``/v2/...``, a ``.json``
suffix ignored, an ``Accept`` that excludes JSON refused with 406 (except by the
dashboard and the plain-text ``/metrics`` and ``/healthcheck``), an
``x-openstack-request-id`` on every response (bodies over the limit are refused inside it,
by ``request_guard.py``), and (with metrics on) every response's duration by method,
route template and status. It is a plain ASGI
middleware (not Starlette's BaseHTTPMiddleware) so it adds no task or copy per request.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lbaas.api.metrics import route_template
from lbaas.api.neutron_errors import is_networking_path, neutron_body
from lbaas.metrics.process import ProcessMetrics

_ALIASES = (("/v2.0/lbaas", "/v2/lbaas"), ("/v2.0/octavia", "/v2/octavia"))
# The dashboard serves a page, its script and an event stream: a browser asks for those by
# their own types (text/html, text/event-stream), which the JSON rule would refuse.
_NOT_JSON_ONLY = ("/dashboard",)
# Plain-text pages: a scraper or a probe asking for text/plain gets what they serve.
_TEXT_PAGES = frozenset({"/metrics", "/healthcheck"})


def _accepts_json(accept: str) -> bool:
    if not accept.strip():
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("*/*", "application/*", "application/json", "") or media.endswith("+json"):
            return True
    # Unparseable values count as acceptable; only a clear non-JSON list is refused.
    return not all("/" in p for p in accept.split(","))


def _not_acceptable(path: str) -> dict[str, Any]:
    """The 406 body: pecan's, as Octavia answers, or Neutron's on the Networking routes."""
    message = "Only content type application/json is accepted."
    if is_networking_path(path):
        return neutron_body(406, message, "HTTPNotAcceptable")
    return {"code": 406, "title": "Not Acceptable", "description": message}


async def _send_json(send: Send, status: int, body: dict[str, Any], request_id: str) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"x-openstack-request-id", request_id.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class EdgeMiddleware:
    def __init__(self, app: ASGIApp, metrics: ProcessMetrics | None = None) -> None:
        self.app = app
        # Times every response (406 from here, 400 and 413 from the guard included).
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.metrics is None:
            await self._serve(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def timed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        # The router records the matched route in the scope it is given, a copy when the
        # path was rewritten; ``_serve`` hands that copy back through ``routed``.
        routed: list[Scope] = [scope]
        try:
            await self._serve(scope, receive, timed, routed)
        finally:
            self.metrics.observe_request(
                scope["method"], route_template(routed[-1]), status, time.perf_counter() - started
            )

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, routed: list[Scope] | None = None
    ) -> None:
        request_id = f"req-{uuid.uuid4()}"
        scope.setdefault("state", {})["request_id"] = request_id
        path: str = scope["path"]
        if path.endswith(".json") and path.startswith("/v2"):
            path = path[: -len(".json")]
        for old, new in _ALIASES:
            if path == old or path.startswith(old + "/"):
                path = new + path[len(old) :]
        if path != scope["path"]:
            scope = {**scope, "path": path, "raw_path": path.encode()}
            if routed is not None:
                routed.append(scope)
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in scope["headers"]}
        json_only = not path.startswith(_NOT_JSON_ONLY) and path not in _TEXT_PAGES
        if json_only and "accept" in headers and not _accepts_json(headers["accept"]):
            await _send_json(send, 406, _not_acceptable(path), request_id)
            return

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [
                    *message["headers"],
                    (b"x-openstack-request-id", request_id.encode()),
                ]
            await send(message)

        await self.app(scope, receive, send_with_id)
