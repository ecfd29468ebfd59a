"""The instances lbaas knows of, in the Compute (Nova) API's shape, read-only.

lbaas is no compute service, but it records instances' ports (``POST /v2.0/ports`` with
``device_owner compute:…`` and the instance's id as ``device_id``). Horizon's
load-balancer wizard (octavia-dashboard) lists the project's servers through Nova before
it opens, to offer them as pool members with their ports' addresses; a cloud without
Nova in its catalog never gets past the wizard's spinner. So lbaas answers the two reads
it makes, under ``/compute/v2.1`` (put in the catalog as ``compute``): the version
document novaclient asks first, and ``/servers/detail``: one server per device id of the
caller's compute ports, named after the port's DNS name (the instance's hostname), its
addresses grouped by network name as Nova groups them. Nothing here starts or stops an
instance; writes are 404s as for any path lbaas does not serve.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Depends, Request

from lbaas.api.deps import Call, get_call
from lbaas.api.routing import JsonRoute
from lbaas.db.network import network_repo
from lbaas.db.tables import PortRow
from lbaas.identity.policy import Rule, allowed, require_reader
from lbaas.model.enums import NetworkResourceStatus

router = APIRouter(route_class=JsonRoute, tags=["compute"])
PREFIX = "/compute/v2.1"
#: The microversion range answered: 2.1 only (no microversioned field is served).
VERSION = "2.1"
COMPUTE_OWNER = "compute:"


def _version(request: Request) -> dict[str, Any]:
    href = str(request.base_url).rstrip("/") + PREFIX + "/"
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": VERSION,
        "min_version": VERSION,
        "updated": "2013-07-23T11:33:21Z",
        "links": [{"rel": "self", "href": href}],
    }


@router.get(PREFIX)
@router.get(PREFIX + "/")
def show_version(request: Request, call: Call = Depends(get_call)) -> dict[str, Any]:
    _, ctx = call
    require_reader(ctx)
    return {"version": _version(request)}


def _server(
    device_id: str, project: str | None, ports: list[PortRow], names: dict[str, str]
) -> dict[str, Any]:
    addresses: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for port in ports:
        if port.ip_address is None:
            continue
        family = 6 if ":" in port.ip_address else 4
        addresses[names.get(port.network_id, port.network_id)].append(
            {"addr": port.ip_address, "version": family, "OS-EXT-IPS:type": "fixed"}
        )
    hostname = next((p.dns_name for p in ports if p.dns_name), None)
    return {
        "id": device_id,
        "name": hostname or next((p.name for p in ports if p.name), device_id),
        "status": NetworkResourceStatus.ACTIVE.value,
        "tenant_id": project or "",
        "addresses": dict(addresses),
        "image": "",
        "flavor": {},
        "metadata": {},
        "links": [],
        "OS-EXT-AZ:availability_zone": "",
    }


@router.get(PREFIX + "/servers/detail")
@router.get(PREFIX + "/servers")
def list_servers(request: Request, call: Call = Depends(get_call)) -> dict[str, Any]:
    """The caller's instances (``project_id`` or ``all_tenants`` as Nova takes them)."""
    services, ctx = call
    require_reader(ctx)
    wanted = request.query_params.get("project_id") or request.query_params.get("tenant_id")
    devices: dict[tuple[str, str | None], list[PortRow]] = defaultdict(list)
    with services.database.read() as session:
        names = {n.id: n.name or n.id for n in network_repo.all_networks(session)}
        for row in network_repo.all_ports(session):
            if not (row.device_owner or "").startswith(COMPUTE_OWNER) or not row.device_id:
                continue
            project = network_repo.port_project(session, row)
            if not allowed(ctx, Rule.READ, project) or (wanted and project != wanted):
                continue
            devices[(row.device_id, project)].append(row)
    servers = [_server(d, p, rows, names) for (d, p), rows in sorted(devices.items())]
    return {"servers": servers}
