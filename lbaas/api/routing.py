"""A route class that renders plain results with orjson, skipping FastAPI's encoder.

Handlers return ready-made JSON-able dicts (views already produce Octavia's exact shape),
so FastAPI's recursive ``jsonable_encoder`` pass over every list item is pure overhead —
it was the largest single cost of listing a thousand load balancers. Results that are
already ``Response`` objects pass through unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import orjson
from fastapi.routing import APIRoute
from starlette.responses import Response


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
