"""What every key-manager route needs: the vault, the caller's project, the base href."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import NamedTuple

from fastapi import Depends
from starlette.requests import Request

from lbaas.api.deps import Call, get_call
from lbaas.db.secrets.secret_vault import SecretVault
from lbaas.errors import InvalidInput, NotFound, ServiceUnavailable
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, authorize

DEFAULT_LIMIT = 10
MAX_LIMIT = 100


class KmCall(NamedTuple):
    vault: SecretVault
    project_id: str
    ctx: RequestContext
    base: str
    max_payload: int


async def km_call(request: Request, call: Call = Depends(get_call)) -> KmCall:
    vault = call.services.vault
    if vault is None:
        raise ServiceUnavailable("The key manager is not enabled.")
    if call.ctx.project_id is None:
        raise InvalidInput("A project is required (X-Project-Id).")
    settings = call.services.settings.keymanager
    base = settings.host_href or str(request.base_url)
    return KmCall(
        vault, call.ctx.project_id, call.ctx, base.rstrip("/"), settings.max_payload_bytes
    )


def may_read(km: KmCall) -> None:
    """Secrets are scoped to the caller's project for everyone, administrators included."""
    authorize(km.ctx, Rule.READ, km.project_id)


def may_write(km: KmCall) -> None:
    authorize(km.ctx, Rule.WRITE, km.project_id)


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    return str(uuid.uuid4())


def parse_uuid(value: str, kind: str) -> str:
    """A path id that is not a UUID is "not found", as a missing one."""
    try:
        return str(uuid.UUID(value))
    except ValueError as exc:
        raise NotFound(f"{kind} not found.") from exc


def page(limit: int | None, offset: int | None) -> tuple[int, int]:
    lim = DEFAULT_LIMIT if limit is None else limit
    off = 0 if offset is None else offset
    if lim < 0 or off < 0:
        raise InvalidInput("limit and offset must not be negative.")
    return min(lim, MAX_LIMIT), off
