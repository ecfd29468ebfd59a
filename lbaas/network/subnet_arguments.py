"""``lbaas network create-subnet``'s arguments, checked before anything is written.

A malformed CIDR, gateway, id or MTU used to reach ``ipaddress`` or pydantic and end in a
traceback, or be stored and refused much later by the API. Each is checked here and
refused in one line that names the argument.
"""

from __future__ import annotations

import ipaddress
import uuid

from pydantic import ValidationError

from lbaas.config import SubnetDeclaration
from lbaas.errors import CommandRefused


def subnet_declaration(
    cidr: str,
    *,
    subnet_id: str | None,
    network_id: str | None,
    name: str,
    gateway: str | None,
    mtu: int | None,
) -> SubnetDeclaration:
    """The subnet the arguments describe (ids made up when not given), or CommandRefused."""
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        raise CommandRefused(f"{cidr!r} is not a CIDR such as 10.0.0.0/24 or fd00::/64") from None
    if gateway is not None:
        _check_gateway(gateway, network)
    try:
        return SubnetDeclaration(
            id=_uuid(subnet_id, "--id"),
            network_id=_uuid(network_id, "--network-id"),
            cidr=str(network),
            name=name,
            gateway_ip=gateway,
            mtu=mtu,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise CommandRefused(f"invalid subnet: {problems}") from None


def _check_gateway(gateway: str, network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> None:
    try:
        address = ipaddress.ip_address(gateway)
    except ValueError:
        raise CommandRefused(f"--gateway {gateway!r} is not an IP address") from None
    if address.version != network.version:
        raise CommandRefused(f"--gateway {gateway} is not an IPv{network.version} address")


def _uuid(value: str | None, option: str) -> str:
    if value is None:
        return str(uuid.uuid4())
    try:
        uuid.UUID(value)
    except ValueError:
        raise CommandRefused(f"{option} {value!r} is not a UUID") from None
    return value
