"""Factories for the POST, PUT and DELETE endpoints of the tree's top-level objects.

Every such handler opened the write recipe (``tree_write``), did what is particular to
its resource — look the row up, lock, apply, mark — and then rendered the row (201 for a
POST) or answered 204 (DELETE). The factories hold the part that was the same; a resource gives
only its particular step, a function of the write, the caller and the id from the path.
The path parameters are read by ``path_key``, so the OpenAPI document keeps their names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse, Response

from lbaas.api.deps import Call, get_call
from lbaas.api.read_routes import Render, path_key
from lbaas.api.writes import TreeWrite, tree_write
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import check_given_id

# (write, caller, the request's object) -> the new row
Create = Callable[[TreeWrite, RequestContext, Any], Any]
# (write, caller, key from the path, the request's object) -> the changed row
Update = Callable[[TreeWrite, RequestContext, Any, Any], Any]
# (write, caller, key from the path) -> None; marks what the delete removes
Delete = Callable[[TreeWrite, RequestContext, Any], None]


def add_create_route(
    router: APIRouter,
    path: str,
    wrapper: str,
    body_type: type[Any],
    create: Create,
    render: Render,
) -> None:
    """Register ``POST path`` as ``create_<wrapper>``: ``create`` builds the row from the
    body's ``wrapper`` object; the answer is 201 ``{wrapper: the row rendered}``."""

    def create_endpoint(body: Any, call: Call = Depends(get_call)) -> JSONResponse:
        services, ctx = call
        check_given_id(ctx, getattr(body, wrapper))
        with tree_write(services) as w:
            row = create(w, ctx, getattr(body, wrapper))
            view = w.view(render, row)
        return JSONResponse({wrapper: view}, status_code=201)

    create_endpoint.__annotations__["body"] = body_type
    create_endpoint.__name__ = f"create_{wrapper}"
    router.add_api_route(
        path, create_endpoint, methods=["POST"], name=create_endpoint.__name__, status_code=201
    )


def add_update_route(
    router: APIRouter,
    path: str,
    wrapper: str,
    body_type: type[Any],
    update: Update,
    render: Render,
    *,
    name: str | None = None,
) -> None:
    """Register ``PUT path`` as ``name`` (``update_<wrapper>`` unless given): ``update``
    applies the body's ``wrapper`` object; the answer is ``{wrapper: the row rendered}``."""
    ident = path_key(path)

    def update_endpoint(
        body: Any, row_id: Any = Depends(ident), call: Call = Depends(get_call)
    ) -> dict[str, Any]:
        services, ctx = call
        with tree_write(services) as w:
            row = update(w, ctx, row_id, getattr(body, wrapper))
            view = w.view(render, row)
        return {wrapper: view}

    update_endpoint.__annotations__["body"] = body_type
    update_endpoint.__name__ = name or f"update_{wrapper}"
    router.add_api_route(path, update_endpoint, methods=["PUT"], name=update_endpoint.__name__)


def add_delete_route(
    router: APIRouter, path: str, wrapper: str, delete: Delete, *, name: str | None = None
) -> None:
    """Register ``DELETE path`` as ``name`` (``delete_<wrapper>`` unless given): 204 once
    ``delete`` has marked what goes."""
    ident = path_key(path)

    def delete_endpoint(row_id: Any = Depends(ident), call: Call = Depends(get_call)) -> Response:
        services, ctx = call
        with tree_write(services) as w:
            delete(w, ctx, row_id)
        return Response(status_code=204)

    delete_endpoint.__name__ = name or f"delete_{wrapper}"
    router.add_api_route(
        path, delete_endpoint, methods=["DELETE"], name=delete_endpoint.__name__, status_code=204
    )
