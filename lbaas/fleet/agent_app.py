"""The agent's HTTP app (``/v1``): the routes of each data plane on this host, one error shape.

Each data plane brings its own routes (``lbaas.amphora.api``, ``lbaas.l4node.api``); this
module puts them in one app with ``GET /v1/info``. Every error leaves as an ``ErrorBody``
with one status per kind (see ``lbaas.wire.amphora``); FastAPI's 422 for a body that does
not match the schema is turned into 400, which is what the controller treats as its own
bug. The routes know nothing of TLS; ``server`` puts mutual TLS in front. Every answer
states the agent's wire version (``lbaas.wire.versions``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import FastAPI, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lbaas.amphora.api import serve_amphorae
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.errors import (
    Conflict,
    ConvergeError,
    InvalidInput,
    InvalidRenderedConfig,
    LbaasError,
    NotFound,
)
from lbaas.fleet.agent_certs import AgentCertificates, serve_certificates
from lbaas.host.base import HostOpsError
from lbaas.l4node.api import serve_l4
from lbaas.l4node.manager import L4NodeManager
from lbaas.wire.amphora import (
    AMPHORA_ID_PATTERN,
    API_PREFIX,
    AgentInfo,
    ErrorBody,
)
from lbaas.wire.versions import HEADER, WIRE_VERSION, stated

log = logging.getLogger(__name__)

AmphoraIdPath = Path(pattern=AMPHORA_ID_PATTERN)


def _error(status: int, kind: str, message: str, detail: str | None = None) -> JSONResponse:
    body = ErrorBody(error=kind, message=message, detail=detail)
    return JSONResponse(status_code=status, content=body.model_dump())


def create_agent_app(
    manager: AmphoraRegistry,
    info: Callable[[], AgentInfo],
    l4: L4NodeManager | None = None,
    certificates: AgentCertificates | None = None,
) -> FastAPI:
    """The ASGI app serving ``manager`` (and ``l4``'s kernel load balancers, if given);
    ``info`` builds the answer to GET /v1/info; ``certificates``: the routes that renew
    the agent's certificate and trust bundle (``lbaas.wire.certificates``)."""
    app = FastAPI(title="lbaas agent", version="1", docs_url=None, redoc_url=None)
    _answer_errors(app)
    state_wire_version(app)
    serve_amphorae(app, manager)
    _serve_info(app, info)
    if l4 is not None:
        serve_l4(app, l4)
    if certificates is not None:
        serve_certificates(app, certificates)
    return app


def _answer_errors(app: FastAPI) -> None:
    """One ``ErrorBody`` answer per kind of error (statuses in ``lbaas.wire.amphora``)."""

    @app.exception_handler(RequestValidationError)
    async def _bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        return _error(400, "bad_request", "invalid request", problems)

    @app.exception_handler(InvalidInput)
    async def _invalid(request: Request, exc: InvalidInput) -> JSONResponse:
        return _error(400, "bad_request", exc.message)

    @app.exception_handler(NotFound)
    async def _not_found(request: Request, exc: NotFound) -> JSONResponse:
        return _error(404, "not_found", exc.message)

    @app.exception_handler(Conflict)
    async def _stale(request: Request, exc: Conflict) -> JSONResponse:
        return _error(409, "stale_version", exc.message)

    @app.exception_handler(InvalidRenderedConfig)
    async def _refused(request: Request, exc: InvalidRenderedConfig) -> JSONResponse:
        return _error(422, "invalid_config", exc.user_message, exc.operator_message)

    @app.exception_handler(ConvergeError)
    async def _converge(request: Request, exc: ConvergeError) -> JSONResponse:
        return _error(500, "host", exc.user_message, exc.operator_message)

    @app.exception_handler(HostOpsError)
    async def _host(request: Request, exc: HostOpsError) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
        return _error(500, "host", "the agent could not change its host", str(exc))

    @app.exception_handler(LbaasError)
    async def _other(request: Request, exc: LbaasError) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
        return _error(500, "internal", "the agent failed", str(exc))


def _serve_info(app: FastAPI, info: Callable[[], AgentInfo]) -> None:
    @app.get(f"{API_PREFIX}/info", response_model=AgentInfo)
    def get_info(request: Request) -> JSONResponse:
        answer = info()
        if stated(request.headers.get(HEADER)) < 2:
            # A controller of version 1 refuses fields it does not know: its AgentInfo.
            return JSONResponse(answer.model_dump(mode="json", exclude={"wire_version"}))
        return JSONResponse(
            answer.model_copy(update={"wire_version": WIRE_VERSION}).model_dump(mode="json")
        )


def state_wire_version(app: FastAPI) -> None:
    """Every answer of ``app`` states this code's wire version (``lbaas.wire.versions``)."""
    app.add_middleware(_StateVersion)


_VERSION_HEADER = (HEADER.lower().encode(), str(WIRE_VERSION).encode())


class _StateVersion:
    """Adds ``HEADER`` to every answer, errors included (plain ASGI: no body buffering)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def stating(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), _VERSION_HEADER]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, stating)
