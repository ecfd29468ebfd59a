"""``/v2/lbaas/providers``: the enabled providers and the flavor / zone keys each accepts.

Nothing here touches the database: providers are loaded once at start-up and declare
their capabilities then (``ProviderCapabilities.flavor_keys`` and
``availability_zone_keys``), so these reads are answered from the registry. The lists are
small and fixed, hence not paged; the capability lists take Octavia's ``name`` /
``description`` exact-match filters and ``fields``, and ignore other query keys as the
reference does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter, Depends, Query

from lbaas.api.deps import Call, get_call
from lbaas.api.listing import select_fields
from lbaas.api.routing import JsonRoute
from lbaas.api.services import ApiServices
from lbaas.errors import InvalidInput
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, authorize
from lbaas.providers.base import ProviderCapabilities

router = APIRouter(route_class=JsonRoute, tags=["providers"])


@router.get("/lbaas/providers")
def list_providers(
    fields: list[str] = Query(default=[]), call: Call = Depends(get_call)
) -> dict[str, Any]:
    services, ctx = call
    authorize(ctx, Rule.READ, ctx.project_id)
    listed = [
        select_fields({"name": name, "description": description}, fields)
        for name, description in services.providers.listed()
    ]
    return {"providers": listed}


def _capabilities(
    services: ApiServices,
    ctx: RequestContext,
    provider: str,
    keys_of: Callable[[ProviderCapabilities], Mapping[str, str]],
    name: str | None,
    description: str | None,
    fields: list[str],
) -> list[dict[str, Any]]:
    authorize(ctx, Rule.ADMIN, ctx.project_id)
    if services.providers.resolve(provider) is None:
        raise InvalidInput(f"Provider '{provider}' is not enabled.")
    keys = keys_of(services.providers.capabilities(provider))
    return [
        select_fields({"name": key, "description": text}, fields)
        for key, text in keys.items()
        if (not name or key == name) and (not description or text == description)
    ]


def _add_capabilities_route(
    kind: str, keys_of: Callable[[ProviderCapabilities], Mapping[str, str]]
) -> None:
    """``GET /lbaas/providers/{provider}/<kind>_capabilities``: the keys a provider
    accepts in the data of a ``kind`` profile."""
    route = f"{kind}_capabilities"  # the path's last part, the handler and the answer's key

    def capabilities(
        provider: str,
        name: str | None = None,
        description: str | None = None,
        fields: list[str] = Query(default=[]),
        call: Call = Depends(get_call),
    ) -> dict[str, Any]:
        services, ctx = call
        found = _capabilities(services, ctx, provider, keys_of, name, description, fields)
        return {route: found}

    capabilities.__name__ = route
    router.add_api_route(
        "/lbaas/providers/{provider}/" + route, capabilities, methods=["GET"], name=route
    )


_add_capabilities_route("flavor", lambda c: c.flavor_keys)
_add_capabilities_route("availability_zone", lambda c: c.availability_zone_keys)
