"""Response bodies in Barbican's shapes. No view ever carries a payload."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lbaas.db.secrets.secret_vault import ContainerView
from lbaas.db.tables import SecretConsumerRow, SecretRow
from lbaas.model.enums import ProvisioningStatus

ACTIVE = ProvisioningStatus.ACTIVE.value


def _time(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def secret_href(base: str, secret_id: str) -> str:
    return f"{base}/v1/secrets/{secret_id}"


def container_href(base: str, container_id: str) -> str:
    return f"{base}/v1/containers/{container_id}"


def secret(
    base: str, row: SecretRow, consumers: list[SecretConsumerRow] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "secret_ref": secret_href(base, row.id),
        "name": row.name,
        "secret_type": row.secret_type,
        "algorithm": row.algorithm,
        "bit_length": row.bit_length,
        "mode": row.mode,
        "expiration": _time(row.expiration),
        "status": ACTIVE,
        "created": _time(row.created_at),
        "updated": _time(row.updated_at),
        "creator_id": row.creator_id,
        "consumers": [
            {"service": c.service, "resource_type": c.resource_type, "resource_id": c.resource_id}
            for c in consumers or []
        ],
    }
    if row.content_type is not None:
        body["content_types"] = {"default": row.content_type}
    return body


def container(base: str, view: ContainerView) -> dict[str, Any]:
    row = view.row
    return {
        "container_ref": container_href(base, row.id),
        "name": row.name,
        "type": row.type,
        "status": ACTIVE,
        "created": _time(row.created_at),
        "updated": _time(row.updated_at),
        "creator_id": row.creator_id,
        "secret_refs": [
            {"name": name, "secret_ref": secret_href(base, secret_id)}
            for name, secret_id in view.secrets
        ],
        "consumers": [
            {"name": c.name, "URL": c.url, "created": _time(c.created_at)} for c in view.consumers
        ],
    }


def page_links(href: str, offset: int, limit: int, total: int) -> dict[str, str]:
    links = {}
    if offset + limit < total:
        links["next"] = f"{href}?limit={limit}&offset={offset + limit}"
    if offset > 0:
        links["previous"] = f"{href}?limit={limit}&offset={max(0, offset - limit)}"
    return links
