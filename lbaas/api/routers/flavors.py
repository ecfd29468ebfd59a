"""``/v2/lbaas/flavors``: named offerings an operator publishes for tenants to pick.

A flavor points at a flavor profile (provider + provider-specific data, admin only); the
flavor itself is what tenants see and name in ``flavor_id`` when they create a load
balancer. The rules are those of every catalog entry (``lbaas.api.catalog_entries``): the
nil UUID is reserved by Octavia as "no flavor", is never found and is not listed.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from lbaas.api.catalog_entries import EntryKind, add_entry_routes
from lbaas.api.lookups import NIL_UUID
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import FlavorCreateBody, FlavorUpdateBody
from lbaas.api.views.catalog import flavor_view
from lbaas.db.tables import FlavorProfileRow, FlavorRow

router = APIRouter(route_class=JsonRoute, tags=["flavors"])


def _real_flavors(*_: Any) -> list[Any]:
    return [FlavorRow.id != NIL_UUID]


FLAVOR = EntryKind(
    table=FlavorRow,
    key="id",
    label="Flavor",
    wrapper="flavor",
    profile_field="flavor_profile_id",
    profile_table=FlavorProfileRow,
    lb_column="flavor_id",
    view=flavor_view,
    listed=_real_flavors,
)

add_entry_routes(
    router, "/lbaas/flavors/{flavor_id}", "flavor", FLAVOR, (FlavorCreateBody, FlavorUpdateBody)
)
