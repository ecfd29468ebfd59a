"""The edge of the HTTP surface: one small ASGI middleware for Octavia's conventions.

Done once here instead of in every handler: ``/v2.0/...`` served as ``/v2/...``, a ``.json``
suffix ignored, an ``Accept`` that excludes JSON refused with 406, an
``x-openstack-request-id`` on every response (bodies over the limit are refused inside it,
by ``request_guard.py``), and (with metrics on)
a count of every response. It is a plain ASGI
middleware (not Starlette's BaseHTTPMiddleware) so it adds no task or copy per request.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lbaas.api.metrics import RequestCounter

_ALIASES = (("/v2.0/lbaas", "/v2/lbaas"), ("/v2.0/octavia", "/v2/octavia"))


def _accepts_json(accept: str) -> bool:
    if not accept.strip():
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("*/*", "application/*", "application/json", "") or media.endswith("+json"):
            return True
    # Unparseable values count as acceptable; only a clear non-JSON list is refused.
    return not all("/" in p for p in accept.split(","))


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


def _counting(send: Send, counter: RequestCounter, method: str) -> Send:
    async def counted(message: Message) -> None:
        if message["type"] == "http.response.start":
            counter.count(method, int(message["status"]))
        await send(message)

    return counted


class EdgeMiddleware:
    def __init__(self, app: ASGIApp, counter: RequestCounter | None = None) -> None:
        self.app = app
        # Counts every response (406 from here, 400 and 413 from the guard included).
        self.counter = counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = f"req-{uuid.uuid4()}"
        scope.setdefault("state", {})["request_id"] = request_id
        if self.counter is not None:
            send = _counting(send, self.counter, scope["method"])
        path: str = scope["path"]
        if path.endswith(".json") and path.startswith("/v2"):
            path = path[: -len(".json")]
        for old, new in _ALIASES:
            if path == old or path.startswith(old + "/"):
                path = new + path[len(old) :]
        if path != scope["path"]:
            scope = {**scope, "path": path, "raw_path": path.encode()}
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if "accept" in headers and not _accepts_json(headers["accept"]):
            await _send_json(
                send,
                406,
                {
                    "code": 406,
                    "title": "Not Acceptable",
                    "description": "Only content type application/json is accepted.",
                },
                request_id,
            )
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
