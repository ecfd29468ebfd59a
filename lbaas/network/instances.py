"""Instances as the port registry knows them, for the metadata service.

lbaas keeps no instance table: an instance is the ``device_id`` of its ports (as Neutron
knows instances only through their ports; Nova, which owns instances in a cloud, is not
part of lbaas). Its project is its ports' project, its hostname the first port's DNS name
(else its name, else Neutron's ``host-<address>``), its name the first port's name.
lbaas's own ports (VIPs, reserved addresses) are never instances.
"""

from __future__ import annotations

from lbaas.db.network import network_repo
from lbaas.db.session import Session
from lbaas.metadata.documents import Instance, default_hostname, first_ipv4
from lbaas.network.ports import is_service_port


def instance_of(session: Session, instance_id: str) -> Instance | None:
    if not instance_id:
        return None
    ports = [
        p
        for p in network_repo.ports_of_device(session, instance_id)
        if not is_service_port(p) and p.project_id
    ]
    if not ports:
        return None
    first = ports[0]
    hostname = first.dns_name or first.name or default_hostname(first.ip_address)
    return Instance(
        id=instance_id,
        project_id=first.project_id or "",
        name=first.name or hostname,
        hostname=hostname,
        local_ipv4=first_ipv4([p.ip_address for p in ports]),
    )
