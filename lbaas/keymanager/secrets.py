"""``/v1/secrets``: store (one or two steps), list, metadata, payload, delete, consumers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from lbaas.db.secrets.secret_vault import Page, SecretFields
from lbaas.errors import InvalidInput
from lbaas.keymanager import payloads, views
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
from lbaas.keymanager.schemas import SecretConsumer, SecretCreate

router = APIRouter()


def _payload_of(body: SecretCreate, km: KmCall) -> tuple[bytes, str] | None:
    if body.payload is None:
        if body.payload_content_type or body.payload_content_encoding:
            raise InvalidInput("payload_content_type requires a payload.")
        return None
    if not body.payload_content_type:
        raise InvalidInput("A payload requires payload_content_type.")
    data = payloads.from_json_body(
        body.payload,
        body.payload_content_type,
        body.payload_content_encoding,
        km.max_payload,
    )
    return data, payloads.normalise_type(body.payload_content_type)


@router.post("/v1/secrets", status_code=201)
@router.post("/v1/secrets/", status_code=201, include_in_schema=False)
def create_secret(body: SecretCreate, km: KmCall = Depends(km_call)) -> dict[str, str]:
    may_write(km)
    fields = SecretFields(
        name=body.name,
        secret_type=body.secret_type,
        algorithm=body.algorithm,
        bit_length=body.bit_length,
        mode=body.mode,
        expiration=payloads.utc_naive(body.expiration),
    )
    payload = _payload_of(body, km)
    row = km.vault.create_secret(km.project_id, km.ctx.project_id, fields, new_id(), payload, now())
    return {"secret_ref": views.secret_href(km.base, row.id)}


@router.get("/v1/secrets")
@router.get("/v1/secrets/", include_in_schema=False)
def list_secrets(
    km: KmCall = Depends(km_call),
    limit: int | None = None,
    offset: int | None = None,
    name: str | None = None,
    secret_type: str | None = None,
    alg: str | None = Query(None),
    mode: str | None = None,
) -> dict[str, Any]:
    may_read(km)
    lim, off = page(limit, offset)
    rows, total = km.vault.list_secrets(
        km.project_id, Page(off, lim), name=name, secret_type=secret_type, algorithm=alg, mode=mode
    )
    href = f"{km.base}/v1/secrets"
    return {
        "secrets": [views.secret(km.base, r) for r in rows],
        "total": total,
        **views.page_links(href, off, lim, total),
    }


def _payload_response(km: KmCall, secret_id: str, accept: str | None) -> Response:
    data, content_type = km.vault.payload(km.project_id, secret_id)
    if not payloads.accepts(accept, content_type):
        return JSONResponse(
            {
                "code": 406,
                "title": "Not Acceptable",
                "description": f"The secret's payload is {content_type}.",
            },
            status_code=406,
        )
    return Response(data, media_type=content_type)


@router.get("/v1/secrets/{secret_id}")
def show_secret(secret_id: str, request: Request, km: KmCall = Depends(km_call)) -> Any:
    may_read(km)
    ident = parse_uuid(secret_id, "Secret")
    accept = request.headers.get("accept", "")
    if accept and "json" not in accept and "*/*" not in accept:
        return _payload_response(km, ident, accept)  # the v1 API's older payload form
    row = km.vault.get_secret(km.project_id, ident)
    return views.secret(km.base, row, km.vault.secret_consumers(km.project_id, ident))


@router.get("/v1/secrets/{secret_id}/payload")
def secret_payload(secret_id: str, request: Request, km: KmCall = Depends(km_call)) -> Response:
    may_read(km)
    return _payload_response(km, parse_uuid(secret_id, "Secret"), request.headers.get("accept"))


@router.put("/v1/secrets/{secret_id}", status_code=204)
async def put_payload(secret_id: str, request: Request, km: KmCall = Depends(km_call)) -> Response:
    may_write(km)
    ident = parse_uuid(secret_id, "Secret")
    content_type = request.headers.get("content-type")
    if not content_type:
        raise InvalidInput("A Content-Type header is required.")
    data = payloads.from_raw_body(
        await request.body(),
        content_type,
        request.headers.get("content-encoding"),
        km.max_payload,
    )
    kind = payloads.normalise_type(content_type)
    await run_in_threadpool(km.vault.put_payload, km.project_id, ident, data, kind, now())
    return Response(status_code=204)


@router.delete("/v1/secrets/{secret_id}", status_code=204)
def delete_secret(secret_id: str, km: KmCall = Depends(km_call)) -> Response:
    may_write(km)
    km.vault.delete_secret(km.project_id, parse_uuid(secret_id, "Secret"))
    return Response(status_code=204)


@router.get("/v1/secrets/{secret_id}/consumers")
def list_secret_consumers(secret_id: str, km: KmCall = Depends(km_call)) -> dict[str, Any]:
    may_read(km)
    ident = parse_uuid(secret_id, "Secret")
    row = km.vault.get_secret(km.project_id, ident)
    consumers = views.secret(km.base, row, km.vault.secret_consumers(km.project_id, ident))
    return {"consumers": consumers["consumers"], "total": len(consumers["consumers"])}


def _set_consumer(secret_id: str, body: SecretConsumer, km: KmCall, add: bool) -> dict[str, Any]:
    may_write(km)
    ident = parse_uuid(secret_id, "Secret")
    key = (body.service, body.resource_type, body.resource_id)
    km.vault.set_secret_consumer(km.project_id, ident, key, now() if add else None)
    row = km.vault.get_secret(km.project_id, ident)
    return views.secret(km.base, row, km.vault.secret_consumers(km.project_id, ident))


@router.post("/v1/secrets/{secret_id}/consumers")
@router.post("/v1/secrets/{secret_id}/consumers/", include_in_schema=False)
def add_secret_consumer(
    secret_id: str, body: SecretConsumer, km: KmCall = Depends(km_call)
) -> dict[str, Any]:
    return _set_consumer(secret_id, body, km, add=True)


@router.delete("/v1/secrets/{secret_id}/consumers")
@router.delete("/v1/secrets/{secret_id}/consumers/", include_in_schema=False)
def remove_secret_consumer(
    secret_id: str, body: SecretConsumer, km: KmCall = Depends(km_call)
) -> dict[str, Any]:
    return _set_consumer(secret_id, body, km, add=False)
