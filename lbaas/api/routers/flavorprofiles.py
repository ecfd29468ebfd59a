"""``/v2/lbaas/flavorprofiles``: provider-specific data behind flavors (admin only).

The rules are those of every profile (``lbaas.api.profiles``); this module names the
flavor-profile variant and its routes.
"""

from __future__ import annotations

from fastapi import APIRouter

from lbaas.api.profiles import ProfileKind, add_profile_routes
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.catalog import FlavorProfileCreateBody, FlavorProfileUpdateBody
from lbaas.api.views.catalog import flavor_profile_view
from lbaas.db import table_rows
from lbaas.db.session import Session
from lbaas.db.tables import FlavorProfileRow, FlavorRow

router = APIRouter(route_class=JsonRoute, tags=["flavorprofiles"])


def _flavors_using(session: Session, profile_id: str) -> int:
    return table_rows.count_rows(session, FlavorRow, FlavorRow.flavor_profile_id == profile_id)


FLAVOR_PROFILE = ProfileKind(
    table=FlavorProfileRow,
    label="Flavor profile",
    data_field="flavor_data",
    wrapper="flavorprofile",
    keys=lambda caps: caps.flavor_keys,
    view=flavor_profile_view,
    users=_flavors_using,
)


add_profile_routes(
    router,
    "/lbaas/flavorprofiles",
    "flavor_profile",
    FLAVOR_PROFILE,
    (FlavorProfileCreateBody, FlavorProfileUpdateBody),
)
