"""Errors in Barbican's shape: ``{"code", "title", "description"}``.

python-barbicanclient shows ``title: description``. Descriptions come from lbaas's own
errors or pydantic's field paths, never from request bodies, so a payload sent in a
malformed request is not echoed back.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from lbaas.errors import ApiError


def barbican_error(status: int, description: str) -> JSONResponse:
    title = HTTPStatus(status).phrase
    return JSONResponse(
        {"code": status, "title": title, "description": description}, status_code=status
    )


def _validation_text(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else str(err.get("msg")))
    return "; ".join(parts) or "Invalid request."


def install(app: FastAPI) -> None:
    async def on_api_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return barbican_error(exc.status_code, exc.message)

    async def on_validation(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return barbican_error(400, _validation_text(exc))

    async def on_http(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return barbican_error(exc.status_code, str(exc.detail))

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
