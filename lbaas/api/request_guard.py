"""What a request may not bring in, refused before any handler runs.

* Bodies over ``api.max_body_bytes``, however they arrive. A ``Content-Length`` over the
  limit is refused at once; a chunked body (no length) is read here, counting, and
  refused the moment it passes the limit. The app is then handed the body already read,
  so nothing behind this middleware ever holds more than the limit (a 64 MB chunked POST
  used to be buffered whole and parsed).
* NUL characters in the path or the query string (``/loadbalancers/%00``): PostgreSQL
  cannot store or compare them, SQLite cuts strings at them, HAProxy cannot read them.

Refusals are 413 and 400 in Octavia's error shape (Neutron's on the Networking routes).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lbaas.api.errors import answer

_NUL_ESCAPES = (b"%00", b"\x00")
_TOO_LARGE = "Request is too large."


def _has_nul(scope: Scope) -> bool:
    query = bytes(scope.get("query_string", b""))
    return "\x00" in scope["path"] or any(e in query for e in _NUL_ESCAPES)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


class RequestGuard:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _has_nul(scope):
            refusal = answer(scope["path"], 400, "NUL characters are not allowed in the URL.")
            await refusal(scope, receive, send)
            return
        length = _declared_length(scope)
        if length is not None and length > self.max_body_bytes:
            await answer(scope["path"], 413, _TOO_LARGE)(scope, receive, send)
            return
        messages = await self._read_body(receive)
        if messages is None:
            await answer(scope["path"], 413, _TOO_LARGE)(scope, receive, send)
            return
        await self.app(scope, _replay(messages, receive), send)

    async def _read_body(self, receive: Receive) -> list[Message] | None:
        """Every body message, or None as soon as the body passes the limit."""
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return messages  # the client went away: let the app see it
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                return None
            if not message.get("more_body", False):
                return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()  # after the body: a disconnect, when it comes

    return replayed
