"""The read side of lbaas's network registry, in the Networking (Neutron) API's shape.

python-octaviaclient resolves ``--vip-subnet-id`` and member ``--subnet-id`` through the
Networking API before it calls the load-balancer API, and with ``--os-auth-type none`` it
sends those calls to the same endpoint. Serving these few reads lets the stock CLI work
against lbaas alone. Port writes (instances' ports) are in ``networking_ports``.

Scoped like every other resource: callers need the reader role; networks and subnets
declared by the operator (no project) are shared and visible to all of them, the others
only to their project; a VIP port belongs to its load balancer's project, any other port
(an amphora's) to the service. Admins and global observers see everything. Another
project's object is a 403 after the 404 check, as the load-balancer API answers.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from fastapi import APIRouter, Depends, Request

from lbaas.api.deps import Call, get_call
from lbaas.api.routing import JsonRoute
from lbaas.db.network import network_repo
from lbaas.db.tables import NetworkRow, PortRow, SubnetRow
from lbaas.errors import Conflict, Forbidden, NotFound
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, allowed, authorize, require_reader
from lbaas.model.enums import NetworkResourceStatus

router = APIRouter(route_class=JsonRoute, tags=["networking"])


def _subnet(row: SubnetRow) -> dict[str, Any]:
    net = ipaddress.ip_network(row.cidr, strict=False)
    hosts = list(net.hosts())
    pools = [{"start": str(hosts[0]), "end": str(hosts[-1])}] if hosts else []
    return {
        "id": row.id,
        "name": row.name,
        "network_id": row.network_id,
        "cidr": row.cidr,
        "ip_version": row.ip_version,
        "gateway_ip": row.gateway_ip,
        "allocation_pools": pools,
        "enable_dhcp": False,
        "project_id": row.project_id or "",
        "tenant_id": row.project_id or "",
        "tags": [],
    }


def _network(row: NetworkRow, subnet_ids: list[str]) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "subnets": subnet_ids,
        "admin_state_up": True,
        "status": NetworkResourceStatus.ACTIVE.value,
        "mtu": row.mtu,
        "shared": True,
        "project_id": row.project_id or "",
        "tenant_id": row.project_id or "",
        "tags": [],
    }


def port_view(row: PortRow, project_id: str | None) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "network_id": row.network_id,
        "fixed_ips": [{"subnet_id": row.subnet_id, "ip_address": row.ip_address}],
        "device_owner": row.device_owner,
        "device_id": row.device_id,
        "binding:host_id": row.host_id,
        "dns_name": row.dns_name,
        "project_id": project_id or "",
        "tenant_id": project_id or "",
        "admin_state_up": True,
        "status": NetworkResourceStatus.ACTIVE.value,
        "tags": [],
    }


def matches(obj: dict[str, Any], request: Request) -> bool:
    for key, value in request.query_params.items():
        if key in ("fields", "limit", "marker", "sort_key", "sort_dir", "fixed_ips"):
            continue
        if key in obj and str(obj[key]) != value:
            return False
    return True


def visible(ctx: RequestContext, project_id: str | None) -> bool:
    """Shared (no project) objects are visible to every reader; the rest as ``Rule.READ``."""
    return project_id is None or allowed(ctx, Rule.READ, project_id)


def owner_project(ctx: RequestContext, project_id: str | None, tenant_id: str | None) -> str | None:
    """The project a new object is for: the caller's unless an admin names another."""
    if project_id and tenant_id and project_id != tenant_id:
        raise Conflict("project_id and tenant_id do not match.")
    project = project_id or tenant_id or ctx.project_id
    authorize(ctx, Rule.WRITE, project)
    return project


@router.get("/subnets")
def list_subnets(request: Request, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        rows = network_repo.all_subnets(session)
        subnets = [_subnet(s) for s in rows if visible(ctx, s.project_id)]
    return {"subnets": [s for s in subnets if matches(s, request)]}


@router.get("/subnets/{subnet_id}")
def show_subnet(subnet_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        row = network_repo.get_subnet(session, subnet_id)
        if row is None:
            raise NotFound(f"Subnet {subnet_id} could not be found.", neutron_type="SubnetNotFound")
        if not visible(ctx, row.project_id):
            raise Forbidden()
        return {"subnet": _subnet(row)}


@router.get("/networks")
def list_networks(request: Request, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        subnets = network_repo.all_subnets(session)
        nets = [
            _network(n, [s.id for s in subnets if s.network_id == n.id])
            for n in network_repo.all_networks(session)
            if visible(ctx, n.project_id)
        ]
    return {"networks": [n for n in nets if matches(n, request)]}


@router.get("/networks/{network_id}")
def show_network(network_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        row = network_repo.get_network(session, network_id)
        if row is None:
            raise NotFound(
                f"Network {network_id} could not be found.", neutron_type="NetworkNotFound"
            )
        if not visible(ctx, row.project_id):
            raise Forbidden()
        subnets = network_repo.subnets_of_network(session, network_id)
        return {"network": _network(row, [s.id for s in subnets])}


@router.get("/floatingips")
def list_floating_ips(call: Call = Depends(get_call)) -> dict[str, Any]:
    """lbaas has no floating IPs; the Ansible ``openstack.cloud.loadbalancer`` module looks
    for the VIP's after every create and needs the empty list a cloud without them gives
    (whatever the filters). Readable by whoever may read the rest of the registry."""
    _, ctx = call
    require_reader(ctx)
    return {"floatingips": []}


@router.get("/ports/{port_id}")
def show_port(port_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        row = network_repo.get_port(session, port_id)
        if row is None:
            raise NotFound(f"Port {port_id} could not be found.", neutron_type="PortNotFound")
        # No project (an amphora's port): only admins and global observers pass.
        project = network_repo.port_project(session, row)
        authorize(ctx, Rule.READ, project)
        return {"port": port_view(row, project)}
