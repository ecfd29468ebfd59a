"""Port writes and the port list, in the Networking (Neutron) API's shape.

``POST/PUT/DELETE /v2.0/ports`` record instances' ports (``lbaas.network.ports``): what
the metadata proxy needs to tell which instance a request comes from. Scoped like the
load-balancer API: a member writes its own project's ports (an admin any project's, and
may name the project); readers see their project's ports, admins and global observers
all of them. A port on a network the caller cannot see is refused as if the network did
not exist.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.deps import Call, get_call
from lbaas.api.routers.networking import matches, owner_project, port_view, visible
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.port import PortChanges, PortCreateBody, PortUpdateBody
from lbaas.api.writes import utcnow
from lbaas.db.network import network_repo
from lbaas.db.session import Session
from lbaas.db.tables import PortRow
from lbaas.errors import NotFound
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, allowed, authorize, require_reader
from lbaas.network import ports

router = APIRouter(route_class=JsonRoute, tags=["networking"])

# Request attribute → ``PortFields`` / column name.
_FIELDS = {
    "name": "name",
    "device_id": "device_id",
    "device_owner": "device_owner",
    "binding_host_id": "host_id",
    "dns_name": "dns_name",
}


def _fields(body: PortChanges) -> ports.PortFields:
    return ports.PortFields(**{column: getattr(body, attr) for attr, column in _FIELDS.items()})


@router.post("/ports", status_code=201)
def create_port(body: PortCreateBody, call: Call = Depends(get_call)) -> JSONResponse:
    services, ctx = call
    request = body.port
    project = owner_project(ctx, request.project_id, request.tenant_id)
    fixed = request.fixed_ips[0] if request.fixed_ips else None
    new = ports.NewPort(
        network_id=request.network_id,
        project_id=project,
        fields=_fields(request),
        subnet_id=fixed.subnet_id if fixed else None,
        ip_address=fixed.ip_address if fixed else None,
    )
    with services.database.write() as session:
        network = network_repo.get_network(session, request.network_id)
        if network is None or not visible(ctx, network.project_id):
            raise NotFound(
                f"Network {request.network_id} could not be found.",
                neutron_type="NetworkNotFound",
            )
        row = ports.create_port(session, new, utcnow())
        view = port_view(row, project)
    return JSONResponse({"port": view}, status_code=201)


def _writable_port(session: Session, ctx: RequestContext, port_id: str) -> PortRow:
    row = network_repo.get_port(session, port_id)
    if row is None:
        raise NotFound(f"Port {port_id} could not be found.", neutron_type="PortNotFound")
    authorize(ctx, Rule.WRITE, network_repo.port_project(session, row))
    return row


@router.put("/ports/{port_id}")
def update_port(
    port_id: str, body: PortUpdateBody, call: Call = Depends(get_call)
) -> dict[str, Any]:
    services, ctx = call
    sent = body.port
    changes = {column: getattr(sent, attr) for attr, column in _FIELDS.items() if sent.given(attr)}
    with services.database.write() as session:
        row = _writable_port(session, ctx, port_id)
        ports.update_port(row, changes)
        session.flush()
        return {"port": port_view(row, network_repo.port_project(session, row))}


@router.delete("/ports/{port_id}", status_code=204)
def delete_port(port_id: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    with services.database.write() as session:
        row = _writable_port(session, ctx, port_id)
        ports.delete_port(session, row)
    return Response(status_code=204)


@router.get("/ports")
def list_ports(request: Request, call: Call = Depends(get_call)) -> dict[str, Any]:
    """Every port the caller may read, filtered by the Neutron attributes sent (exact
    match; ``fixed_ips=ip_address=A`` as the CLI sends it)."""
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        # A port without a project (the service's) is read by admins and observers only.
        owned = [
            (r, network_repo.port_project(session, r)) for r in network_repo.all_ports(session)
        ]
        views = [port_view(r, p) for r, p in owned if allowed(ctx, Rule.READ, p)]
    wanted_ips = [v.split("=", 1)[1] for v in request.query_params.getlist("fixed_ips")]
    return {
        "ports": [
            v
            for v in views
            if matches(v, request) and all(ip in _addresses(v) for ip in wanted_ips)
        ]
    }


def _addresses(view: dict[str, Any]) -> list[str]:
    return [fixed["ip_address"] for fixed in view["fixed_ips"]]


# The Networking API extensions whose attributes the port routes serve: the stock CLI
# lists them before it sends ``binding:host_id`` or ``dns_name``.
_EXTENSIONS = (
    ("binding", "Port Binding", "The host a port is bound to (binding:host_id)."),
    ("dns-integration", "DNS Integration", "A port's DNS name (the instance's hostname)."),
)


@router.get("/extensions")
def list_extensions(call: Call = Depends(get_call)) -> dict[str, Any]:
    _, ctx = call
    require_reader(ctx)
    return {
        "extensions": [
            {"alias": alias, "name": name, "description": text, "links": [], "updated": ""}
            for alias, name, text in _EXTENSIONS
        ]
    }
