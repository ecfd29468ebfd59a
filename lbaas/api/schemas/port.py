"""Request schemas of the Networking API's port writes (``POST/PUT /v2.0/ports``).

The attributes an instance's port needs for the metadata proxy: its network and address,
the instance (``device_id``) and its owner kind, the host it is bound to
(``binding:host_id``) and its DNS name (the instance's hostname). ``admin_state_up`` is
accepted because the stock CLI always sends it; a port is always up.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from lbaas.api.schemas.types import IpAddress, Name, ProjectRef, Schema

NetworkRef = Annotated[str, Field(min_length=1, max_length=36)]
DeviceId = Annotated[str, Field(max_length=64)]
DeviceOwner = Annotated[str, Field(max_length=64)]
HostId = Annotated[str, Field(max_length=255)]
# One or more DNS labels, as Neutron's dns_name takes them.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
DnsName = Annotated[str, Field(max_length=255, pattern=rf"^(?:{_LABEL}(?:\.{_LABEL})*\.?)?$")]


class FixedIp(Schema):
    subnet_id: NetworkRef | None = None
    ip_address: IpAddress | None = None


class PortChanges(Schema):
    """What a PUT may change (only what is sent changes)."""

    name: Name = ""
    device_id: DeviceId = ""
    device_owner: DeviceOwner = ""
    binding_host_id: HostId = Field(default="", alias="binding:host_id")
    dns_name: DnsName = ""
    admin_state_up: bool = True


class PortCreate(PortChanges):
    network_id: NetworkRef
    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None
    # One address per port: the registry records one (subnet, address) pair per port.
    fixed_ips: list[FixedIp] = Field(default_factory=list, max_length=1)


class PortCreateBody(Schema):
    port: PortCreate


class PortUpdateBody(Schema):
    port: PortChanges
