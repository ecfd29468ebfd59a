"""A route class that renders plain results with orjson, skipping FastAPI's encoder.

Handlers return ready-made JSON-able dicts (views already produce Octavia's exact shape),
so FastAPI's recursive ``jsonable_encoder`` pass over every list item is pure overhead —
it was the largest single cost of listing a thousand load balancers. Results that are
already ``Response`` objects pass through unchanged. Bodies are parsed by
``json_body.CheckedJsonRequest``.

The route is also where a request that lost its database connection runs once more on a
fresh one (oslo.db's retry on disconnect): any request, write or read, whose attempt had
committed nothing when the server ended the session (``db.error_mapping`` decides). The
API's handlers change nothing outside the database before their transaction commits
(VIP ports are rows too), so running one again from the start is the same request.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from lbaas.api.json_body import CheckedJsonRequest
from lbaas.db.error_mapping import replay_scope
from lbaas.errors import DatabaseConnectionLost, ServiceUnavailable

LOG = logging.getLogger(__name__)


class JsonResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class JsonRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        status = int(kwargs.get("status_code") or 200)
        if not inspect.iscoroutinefunction(endpoint):
            original = endpoint

            @functools.wraps(original)
            def render_plain(*args: Any, **kw: Any) -> Any:
                result = original(*args, **kw)
                if isinstance(result, Response):
                    return result
                return JsonResponse(result, status_code=status)

            # FastAPI resolves string annotations in the wrapper's module; hand it the
            # original's signature with the annotations already evaluated.
            render_plain.__signature__ = inspect.signature(original, eval_str=True)  # type: ignore[attr-defined]
            endpoint = render_plain
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            checked_request = CheckedJsonRequest(request.scope, request.receive)
            try:
                with replay_scope():
                    return await handler(checked_request)
            except DatabaseConnectionLost as exc:
                if not exc.replayable:
                    raise  # lost during or after a COMMIT: running it again could repeat it
                LOG.info(
                    "%s %s lost its database connection; running it again",
                    request.method,
                    request.url.path,
                )
            except ServiceUnavailable:
                if request.method != "GET":
                    raise
            # The body was read once and is kept by the request object.
            with replay_scope():
                return await handler(checked_request)

        return checked


Endpoint = Callable[..., Any]


def add_write_routes(
    router: APIRouter,
    noun: str,
    collection: str,
    item: str,
    writes: tuple[Endpoint, Endpoint, Endpoint],
    bodies: tuple[type[Any], type[Any]],
) -> None:
    """Register the create (``POST collection``, 201), update (``PUT item``) and delete
    (``DELETE item``, 204) endpoints of ``writes`` as ``{verb}_{noun}``. Their ``body``
    parameter is typed by ``bodies`` (create, update): the endpoints are written once
    for several resources, so the request schema is only known here."""
    create, update, delete = writes
    create.__annotations__["body"], update.__annotations__["body"] = bodies
    for verb, path, method, endpoint, status in (
        ("create", collection, "POST", create, 201),
        ("update", item, "PUT", update, 200),
        ("delete", item, "DELETE", delete, 204),
    ):
        name = f"{verb}_{noun}"
        endpoint.__name__ = name
        router.add_api_route(path, endpoint, methods=[method], name=name, status_code=status)
