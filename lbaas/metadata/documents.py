"""The metadata documents of one instance, in OpenStack's and EC2's layouts.

An instance here is what the port registry knows of it (``lbaas.network.instances``): its
id (the ports' ``device_id``), project, hostname and first address. Only the keys lbaas can
answer truthfully are served; the rest of Nova's layout (keys, user data) is not.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Instance:
    id: str
    project_id: str
    name: str
    hostname: str
    local_ipv4: str | None


def default_hostname(address: str) -> str:
    """Neutron's name for a port without a DNS name: ``host-10-0-0-5``."""
    return "host-" + address.replace(".", "-").replace(":", "-")


def meta_data_json(instance: Instance) -> dict[str, Any]:
    """``/openstack/latest/meta_data.json``."""
    return {
        "uuid": instance.id,
        "name": instance.name,
        "hostname": instance.hostname,
        "project_id": instance.project_id,
        "launch_index": 0,
        "meta": {},
        "public_keys": {},
    }


def ec2_meta_data(instance: Instance) -> dict[str, str]:
    """``/latest/meta-data/<key>``: each key's plain-text value."""
    values = {
        "instance-id": instance.id,
        "hostname": instance.hostname,
        "local-hostname": instance.hostname,
    }
    if instance.local_ipv4 is not None:
        values["local-ipv4"] = instance.local_ipv4
    return values


def first_ipv4(addresses: list[str]) -> str | None:
    for address in addresses:
        if ipaddress.ip_address(address).version == 4:
            return address
    return None
