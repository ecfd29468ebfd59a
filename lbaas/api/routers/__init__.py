"""One router per resource of the API; ``ROUTERS`` are mounted under ``/v2``."""

from __future__ import annotations

from fastapi import APIRouter

from lbaas.api.routers import (
    amphorae,
    availability_zone_profiles,
    availability_zones,
    flavorprofiles,
    flavors,
    healthmonitors,
    l7policies,
    l7rules,
    listeners,
    loadbalancers,
    members,
    pools,
    providers,
    quotas,
)

ROUTERS: list[APIRouter] = [
    loadbalancers.router,
    listeners.router,
    pools.router,
    members.router,
    healthmonitors.router,
    l7policies.router,
    l7rules.router,
    quotas.router,
    providers.router,
    flavors.router,
    flavorprofiles.router,
    availability_zones.router,
    availability_zone_profiles.router,
    amphorae.router,
]
