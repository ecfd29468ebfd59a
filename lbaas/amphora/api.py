"""The agent's ``/v1/amphorae`` routes, a thin layer over ``AmphoraRegistry``.

Plain functions, so FastAPI runs them in its thread pool: converging starts processes and
waits for them, and must not block the event loop. Errors are answered by the handlers
``lbaas.fleet.agent_app`` installs for the whole app.
"""

from __future__ import annotations

from fastapi import FastAPI, Path, Response

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.amphora.self_check import check_amphora
from lbaas.errors import NotFound
from lbaas.wire.amphora import AMPHORA_ID_PATTERN, API_PREFIX, AmphoraSpec, AmphoraStatus
from lbaas.wire.amphora_diagnosis import AmphoraDiagnosis
from lbaas.wire.spares import SparesStatus

AmphoraIdPath = Path(pattern=AMPHORA_ID_PATTERN)


def serve_amphorae(app: FastAPI, registry: AmphoraRegistry) -> None:
    """The ``/v1/amphorae`` routes, each a call on ``registry``."""

    @app.put(f"{API_PREFIX}/amphorae/{{amphora_id}}", response_model=AmphoraStatus)
    def put_amphora(spec: AmphoraSpec, amphora_id: str = AmphoraIdPath) -> AmphoraStatus:
        return registry.put(amphora_id, spec)

    @app.get(f"{API_PREFIX}/amphorae/{{amphora_id}}", response_model=AmphoraStatus)
    def get_amphora(amphora_id: str = AmphoraIdPath) -> AmphoraStatus:
        status = registry.get(amphora_id)
        if status is None:
            raise NotFound.of("Amphora", amphora_id)
        return status

    @app.get(f"{API_PREFIX}/amphorae/{{amphora_id}}/diagnosis", response_model=AmphoraDiagnosis)
    def diagnose_amphora(amphora_id: str = AmphoraIdPath) -> AmphoraDiagnosis:
        # No lock: a look, like the statistics read; a converge meanwhile shows as it is.
        amp = registry.converger(amphora_id)
        if amp is None:
            raise NotFound.of("Amphora", amphora_id)
        return check_amphora(amp)

    @app.get(f"{API_PREFIX}/spares", response_model=SparesStatus)
    def get_spares() -> SparesStatus:
        spares = registry.spares
        return SparesStatus(configured=0) if spares is None else spares.status()

    @app.delete(f"{API_PREFIX}/amphorae/{{amphora_id}}", status_code=204)
    def delete_amphora(amphora_id: str = AmphoraIdPath) -> Response:
        registry.delete(amphora_id)
        return Response(status_code=204)
