"""Ports created, changed and removed through the Networking API (instances' ports).

An instance's port records what the metadata proxy needs: the network and address a
request comes from, the instance (``device_id``) and its project, the host the port is
bound to (``binding:host_id``) and the DNS name served as the instance's hostname. The
ports lbaas makes for itself (VIPs, reserved addresses: owners ``lbaas:…``) cannot be
created, changed or removed here, so a client cannot take a load balancer's address away.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from lbaas.db.network import network_repo
from lbaas.db.session import Session
from lbaas.db.tables import PortRow, SubnetRow
from lbaas.errors import Conflict, InvalidInput, NotFound
from lbaas.network.allocation import contains, free_address

SERVICE_OWNER_PREFIX = "lbaas:"


@dataclass(frozen=True)
class PortFields:
    """The attributes a client sets on a port."""

    name: str = ""
    device_id: str = ""
    device_owner: str = ""
    host_id: str = ""
    dns_name: str = ""


@dataclass(frozen=True)
class NewPort:
    network_id: str
    project_id: str | None
    fields: PortFields
    subnet_id: str | None = None
    ip_address: str | None = None


def is_service_port(port: PortRow) -> bool:
    return port.device_owner.startswith(SERVICE_OWNER_PREFIX)


def _check_owner(device_owner: str) -> None:
    if device_owner.startswith(SERVICE_OWNER_PREFIX):
        raise InvalidInput(
            f"Invalid input for device_owner. Reason: '{SERVICE_OWNER_PREFIX}' owners are "
            "reserved for lbaas's own ports."
        )


def _subnet_of(session: Session, request: NewPort) -> SubnetRow:
    """The requested subnet, or the network's first one holding the address (or a free one)."""
    subnets = network_repo.subnets_of_network(session, request.network_id)
    if request.subnet_id is not None:
        chosen = [s for s in subnets if s.id == request.subnet_id]
        if not chosen:
            raise InvalidInput(
                f"Subnet {request.subnet_id} is not a subnet of network {request.network_id}."
            )
        return chosen[0]
    for subnet in subnets:
        if request.ip_address is None or contains(subnet, request.ip_address):
            return subnet
    raise InvalidInput(f"No subnet of network {request.network_id} can hold the port's address.")


def _address_on(session: Session, subnet: SubnetRow, wanted: str | None) -> str:
    if wanted is None:
        address = free_address(session, subnet)
        if address is None:
            raise Conflict(f"No more IP addresses available on network {subnet.network_id}.")
        return address
    if not contains(subnet, wanted):
        raise InvalidInput(
            f"IP address {wanted} is not a valid IP for the specified subnet {subnet.id}."
        )
    if wanted == subnet.gateway_ip:
        raise Conflict(f"IP address {wanted} is the gateway of subnet {subnet.id}.")
    return wanted


def create_port(session: Session, request: NewPort, now: datetime) -> PortRow:
    """Record the port (in the caller's transaction); 400/404/409 as Neutron answers."""
    _check_owner(request.fields.device_owner)
    if network_repo.get_network(session, request.network_id) is None:
        raise NotFound(f"Network {request.network_id} could not be found.")
    subnet = _subnet_of(session, request)
    address = _address_on(session, subnet, request.ip_address)
    fields = request.fields
    port = PortRow(
        id=str(uuid.uuid4()),
        network_id=subnet.network_id,
        subnet_id=subnet.id,
        ip_address=address,
        device_owner=fields.device_owner,
        device_id=fields.device_id,
        created_at=now,
        name=fields.name,
        project_id=request.project_id,
        host_id=fields.host_id,
        dns_name=fields.dns_name,
    )
    # The unique (subnet, address) constraint decides between concurrent creates.
    if not network_repo.try_reserve_port(session, port):
        raise Conflict(
            f"Unable to complete operation for network {subnet.network_id}. "
            f"The IP address {address} is in use."
        )
    stored = network_repo.get_port(session, port.id)
    assert stored is not None  # inserted just above, in this transaction
    return stored


def update_port(port: PortRow, changes: dict[str, str]) -> None:
    """Apply the sent attributes (``PortFields`` names) to a client's port."""
    if is_service_port(port):
        raise Conflict(f"Port {port.id} belongs to lbaas and cannot be changed.")
    _check_owner(changes.get("device_owner", ""))
    for name, value in changes.items():
        setattr(port, name, value)


def delete_port(session: Session, port: PortRow) -> None:
    if is_service_port(port):
        raise Conflict(f"Port {port.id} belongs to lbaas and cannot be deleted.")
    network_repo.delete_port(session, port)
