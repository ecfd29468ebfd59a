"""Flavors and availability zones: which lbaas flavor or zone an Octavia one stands for.

An Octavia flavor profile of provider ``lbaas`` names an lbaas flavor
(``{"lbaas_flavor_id": "<id>"}``) and an availability zone profile an lbaas zone
(``{"lbaas_availability_zone": "<name>"}``); lbaas's own flavors carry the topology and
the rest. Validation asks lbaas that the named one exists and belongs to the provider.
"""

from __future__ import annotations

from typing import Any

from lbaas_octavia_provider.client import LbaasClient

FLAVOR_KEY = "lbaas_flavor_id"
ZONE_KEY = "lbaas_availability_zone"
FLAVOR_METADATA = {
    FLAVOR_KEY: "The id of an lbaas flavor of this provider (its topology and the rest "
    "are lbaas's flavor profile's)."
}
ZONE_METADATA = {
    ZONE_KEY: "The name of an lbaas availability zone of this provider.",
}


class Refused(Exception):
    """Metadata lbaas does not offer for this provider; the message says why."""


def _only(metadata: dict[str, Any], allowed: dict[str, str]) -> None:
    unknown = sorted(set(metadata) - set(allowed))
    if unknown:
        raise Refused(
            f"lbaas's provider does not take {', '.join(unknown)}: "
            f"the metadata it takes is {', '.join(sorted(allowed))}"
        )


def check_flavor(client: LbaasClient, provider: str, metadata: dict[str, Any]) -> None:
    _only(metadata, FLAVOR_METADATA)
    flavor_id = metadata.get(FLAVOR_KEY)
    if flavor_id is None:
        return
    found = client.read(f"/flavors/{flavor_id}")
    if not found:
        raise Refused(f"lbaas has no flavor {flavor_id}")
    profile_id = found["flavor"].get("flavor_profile_id")
    profile = client.read(f"/flavorprofiles/{profile_id}") if profile_id else None
    if profile and profile["flavorprofile"].get("provider_name") != provider:
        raise Refused(f"lbaas flavor {flavor_id} is not of lbaas's {provider} provider")


def check_zone(client: LbaasClient, provider: str, metadata: dict[str, Any]) -> None:
    _only(metadata, ZONE_METADATA)
    name = metadata.get(ZONE_KEY)
    if name is not None and not client.read(f"/availability_zones/{name}"):
        raise Refused(f"lbaas has no availability zone {name}")


def placement(lb_fields: dict[str, Any]) -> dict[str, Any]:
    """The lbaas flavor and zone a new load balancer asks for, from the metadata Octavia
    resolved its flavor and zone to."""
    out: dict[str, Any] = {}
    flavor = lb_fields.get("flavor")
    if isinstance(flavor, dict) and flavor.get(FLAVOR_KEY):
        out["flavor_id"] = flavor[FLAVOR_KEY]
    zone = lb_fields.get("availability_zone")
    if isinstance(zone, dict) and zone.get(ZONE_KEY):
        out["availability_zone"] = zone[ZONE_KEY]
    return out
