"""The agent's ``/v1/l4`` routes, a thin layer over ``L4NodeManager`` (see ``wire_l4``).

Plain functions, so FastAPI runs them in its thread pool (they run ``nft``). Errors are
answered by the handlers ``api`` installs for the whole app.
"""

from __future__ import annotations

from fastapi import FastAPI, Path, Response

from lbaas.errors import NotFound
from lbaas.l4node.manager import L4NodeManager
from lbaas.wire.l4 import (
    L4_ID_PATTERN,
    L4_PREFIX,
    L4NodeStatuses,
    L4ServiceSpec,
    L4ServiceStatus,
)

LoadBalancerIdPath = Path(pattern=L4_ID_PATTERN)


def serve_l4(app: FastAPI, manager: L4NodeManager) -> None:
    # Fields left unset are left out, so a controller of an earlier release (whose models
    # refuse unknown fields) reads what this agent answers.
    @app.put(
        f"{L4_PREFIX}/{{loadbalancer_id}}",
        response_model=L4ServiceStatus,
        response_model_exclude_none=True,
    )
    def put_service(
        spec: L4ServiceSpec, loadbalancer_id: str = LoadBalancerIdPath
    ) -> L4ServiceStatus:
        return manager.put(loadbalancer_id, spec)

    @app.get(L4_PREFIX, response_model=L4NodeStatuses, response_model_exclude_none=True)
    def list_services(local: bool = False) -> L4NodeStatuses:
        return L4NodeStatuses(services=manager.statuses(local=local))

    @app.get(
        f"{L4_PREFIX}/{{loadbalancer_id}}",
        response_model=L4ServiceStatus,
        response_model_exclude_none=True,
    )
    def get_service(
        loadbalancer_id: str = LoadBalancerIdPath, placement: bool = False, local: bool = False
    ) -> L4ServiceStatus:
        status = manager.get(loadbalancer_id, placement=placement, local=local)
        if status is None:
            raise NotFound.of("L4 service", loadbalancer_id)
        return status

    @app.delete(f"{L4_PREFIX}/{{loadbalancer_id}}", status_code=204)
    def delete_service(loadbalancer_id: str = LoadBalancerIdPath) -> Response:
        manager.delete(loadbalancer_id)
        return Response(status_code=204)
