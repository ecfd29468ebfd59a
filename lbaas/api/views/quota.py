"""The quota object as Octavia renders it, with both spellings of two limits.

Octavia renamed ``load_balancer`` and ``health_monitor`` to ``loadbalancer`` and
``healthmonitor`` but kept returning the old names too, and openstacksdk still reads only
the old ones; every quota view therefore carries both, with the same value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbaas.api.quota import KINDS
from lbaas.config import QuotaSettings
from lbaas.db.tables import QuotaRow


def limits_view(limits: Mapping[str, int | None]) -> dict[str, int | None]:
    """Every limit under its name, plus the deprecated aliases."""
    out: dict[str, int | None] = {kind: limits.get(kind) for kind in KINDS}
    out["load_balancer"] = out["loadbalancer"]
    out["health_monitor"] = out["healthmonitor"]
    return out


def quota_view(project_id: str, limits: Mapping[str, int | None]) -> dict[str, Any]:
    """Octavia's quota object: ``project_id``, its ``tenant_id`` twin and the limits.

    Octavia's types add ``tenant_id`` to every type that has ``project_id``, the quota
    types included, so each quota body (one, list, defaults, PUT) carries both."""
    return {"project_id": project_id, "tenant_id": project_id, **limits_view(limits)}


def stored_limits(row: QuotaRow | None) -> dict[str, int | None]:
    """What the record holds (``None`` = the default applies)."""
    return {kind: (getattr(row, kind) if row is not None else None) for kind in KINDS}


def default_limits(defaults: QuotaSettings) -> dict[str, int | None]:
    return {kind: int(getattr(defaults, kind)) for kind in KINDS}


def effective_limits(row: QuotaRow | None, defaults: QuotaSettings) -> dict[str, int | None]:
    """The limits that apply: the stored value, or the default where none is stored."""
    stored = stored_limits(row)
    fallback = default_limits(defaults)
    return {kind: stored[kind] if stored[kind] is not None else fallback[kind] for kind in KINDS}


def render_quotas(_session: object, rows: list[QuotaRow]) -> list[dict[str, Any]]:
    """List entries: the stored records, ``null`` where the default applies."""
    return [quota_view(row.project_id, stored_limits(row)) for row in rows]
