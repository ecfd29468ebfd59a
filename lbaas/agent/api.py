"""The agent's HTTP routes (``/v1``), a thin layer over ``AmphoraManager``.

Routes are plain functions, so FastAPI runs them in its thread pool: converging starts
processes and waits for them, and must not block the event loop. Every error leaves as an
``ErrorBody`` with one status per kind (see ``lbaas.agent.wire``); FastAPI's 422 for a body
that does not match the schema is turned into 400, which is what the controller treats as its
own bug. The routes know nothing of TLS; ``server`` puts mutual TLS in front.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import FastAPI, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from lbaas.agent.amphora import AmphoraManager
from lbaas.agent.api_l4 import serve_l4
from lbaas.agent.host.base import HostOpsError
from lbaas.agent.l4_node import L4NodeManager
from lbaas.agent.wire import (
    AMPHORA_ID_PATTERN,
    API_PREFIX,
    AgentInfo,
    AmphoraSpec,
    AmphoraStatus,
    ErrorBody,
)
from lbaas.errors import (
    Conflict,
    ConvergeError,
    InvalidInput,
    InvalidRenderedConfig,
    LbaasError,
    NotFound,
)

log = logging.getLogger(__name__)

AmphoraIdPath = Path(pattern=AMPHORA_ID_PATTERN)


def _error(status: int, kind: str, message: str, detail: str | None = None) -> JSONResponse:
    body = ErrorBody(error=kind, message=message, detail=detail)
    return JSONResponse(status_code=status, content=body.model_dump())


def create_agent_app(
    manager: AmphoraManager, info: Callable[[], AgentInfo], l4: L4NodeManager | None = None
) -> FastAPI:
    """The ASGI app serving ``manager`` (and ``l4``'s kernel load balancers, if given);
    ``info`` builds the answer to GET /v1/info."""
    app = FastAPI(title="lbaas agent", version="1", docs_url=None, redoc_url=None)
    _answer_errors(app)
    _serve_amphorae(app, manager, info)
    if l4 is not None:
        serve_l4(app, l4)
    return app


def _answer_errors(app: FastAPI) -> None:
    """One ``ErrorBody`` answer per kind of error (statuses in ``lbaas.agent.wire``)."""

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


def _serve_amphorae(app: FastAPI, manager: AmphoraManager, info: Callable[[], AgentInfo]) -> None:
    """The ``/v1`` routes, each a call on ``manager``."""

    @app.put(f"{API_PREFIX}/amphorae/{{amphora_id}}", response_model=AmphoraStatus)
    def put_amphora(spec: AmphoraSpec, amphora_id: str = AmphoraIdPath) -> AmphoraStatus:
        return manager.put(amphora_id, spec)

    @app.get(f"{API_PREFIX}/amphorae/{{amphora_id}}", response_model=AmphoraStatus)
    def get_amphora(amphora_id: str = AmphoraIdPath) -> AmphoraStatus:
        status = manager.get(amphora_id)
        if status is None:
            raise NotFound.of("Amphora", amphora_id)
        return status

    @app.delete(f"{API_PREFIX}/amphorae/{{amphora_id}}", status_code=204)
    def delete_amphora(amphora_id: str = AmphoraIdPath) -> Response:
        manager.delete(amphora_id)
        return Response(status_code=204)

    @app.get(f"{API_PREFIX}/info", response_model=AgentInfo)
    def get_info() -> AgentInfo:
        return info()
