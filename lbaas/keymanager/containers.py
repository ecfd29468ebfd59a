"""``/v1/containers``: generic, certificate and RSA containers, and their consumers.

A certificate container names its secrets ``certificate`` (required), ``private_key``,
``private_key_passphrase`` and ``intermediates``; an RSA container ``public_key``,
``private_key`` and ``private_key_passphrase``. Every referenced secret must be the
caller's own.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.responses import Response

from lbaas.db.secrets.secret_vault import Page
from lbaas.errors import InvalidInput
from lbaas.keymanager import views
from lbaas.keymanager.common import (
    KmCall,
    km_call,
    may_read,
    may_write,
    new_id,
    now,
    page,
    parse_uuid,
)
from lbaas.keymanager.schemas import ContainerConsumer, ContainerCreate
from lbaas.keyrefs.base import SECRETS, parse_ref

router = APIRouter()

TYPED_NAMES = {
    "certificate": (
        frozenset({"certificate", "private_key", "private_key_passphrase", "intermediates"}),
        frozenset({"certificate"}),
    ),
    "rsa": (
        frozenset({"public_key", "private_key", "private_key_passphrase"}),
        frozenset({"public_key", "private_key"}),
    ),
}


def _members(body: ContainerCreate) -> list[tuple[str, str]]:
    members: list[tuple[str, str]] = []
    for item in body.secret_refs:
        ref = parse_ref(item.secret_ref)
        if ref is None or ref.kind != SECRETS:
            raise InvalidInput(f"secret_ref of {item.name!r} is not a secret reference.")
        if any(name == item.name for name, _ in members):
            raise InvalidInput(f"Duplicate reference name {item.name!r}.")
        members.append((item.name, ref.id))
    if body.type in TYPED_NAMES:
        allowed, required = TYPED_NAMES[body.type]
        names = {name for name, _ in members}
        if names - allowed:
            raise InvalidInput(
                f"A {body.type} container accepts only {sorted(allowed)}; got {sorted(names - allowed)}."
            )
        if required - names:
            raise InvalidInput(f"A {body.type} container needs {sorted(required - names)}.")
    return members


@router.post("/v1/containers", status_code=201)
@router.post("/v1/containers/", status_code=201, include_in_schema=False)
def create_container(body: ContainerCreate, km: KmCall = Depends(km_call)) -> dict[str, str]:
    may_write(km)
    members = _members(body)
    ident = new_id()
    km.vault.create_container(
        km.project_id, km.ctx.project_id, (ident, body.name, body.type), members, now()
    )
    return {"container_ref": views.container_href(km.base, ident)}


@router.get("/v1/containers")
@router.get("/v1/containers/", include_in_schema=False)
def list_containers(
    km: KmCall = Depends(km_call),
    limit: int | None = None,
    offset: int | None = None,
    name: str | None = None,
    type: str | None = None,
) -> dict[str, Any]:
    may_read(km)
    lim, off = page(limit, offset)
    found, total = km.vault.list_containers(km.project_id, Page(off, lim), name=name, type=type)
    return {
        "containers": [views.container(km.base, v) for v in found],
        "total": total,
        **views.page_links(f"{km.base}/v1/containers", off, lim, total),
    }


@router.get("/v1/containers/{container_id}")
def show_container(container_id: str, km: KmCall = Depends(km_call)) -> dict[str, Any]:
    may_read(km)
    view = km.vault.get_container(km.project_id, parse_uuid(container_id, "Container"))
    return views.container(km.base, view)


@router.delete("/v1/containers/{container_id}", status_code=204)
def delete_container(container_id: str, km: KmCall = Depends(km_call)) -> Response:
    may_write(km)
    km.vault.delete_container(km.project_id, parse_uuid(container_id, "Container"))
    return Response(status_code=204)


@router.get("/v1/containers/{container_id}/consumers")
def list_container_consumers(container_id: str, km: KmCall = Depends(km_call)) -> dict[str, Any]:
    may_read(km)
    view = km.vault.get_container(km.project_id, parse_uuid(container_id, "Container"))
    consumers = views.container(km.base, view)["consumers"]
    return {"consumers": consumers, "total": len(consumers)}


def _set_consumer(
    container_id: str, body: ContainerConsumer, km: KmCall, add: bool
) -> dict[str, Any]:
    may_write(km)
    ident = parse_uuid(container_id, "Container")
    view = km.vault.set_container_consumer(
        km.project_id, ident, (body.name, body.URL), now() if add else None
    )
    return views.container(km.base, view)


@router.post("/v1/containers/{container_id}/consumers")
@router.post("/v1/containers/{container_id}/consumers/", include_in_schema=False)
def add_container_consumer(
    container_id: str, body: ContainerConsumer, km: KmCall = Depends(km_call)
) -> dict[str, Any]:
    return _set_consumer(container_id, body, km, add=True)


@router.delete("/v1/containers/{container_id}/consumers")
@router.delete("/v1/containers/{container_id}/consumers/", include_in_schema=False)
def remove_container_consumer(
    container_id: str, body: ContainerConsumer, km: KmCall = Depends(km_call)
) -> dict[str, Any]:
    return _set_consumer(container_id, body, km, add=False)
