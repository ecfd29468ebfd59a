"""IP addresses and CIDRs on their way into an HAProxy configuration.

Addresses are the one kind of tenant string that is not quoted: HAProxy parses ``bind``,
``server`` and ``addr`` arguments itself. So every address is parsed with ``ipaddress``
first, which both rejects anything that is not an address (nothing else can reach the
line) and normalises it, so the same member renders the same text however it was typed.
IPv6 addresses are written in brackets because HAProxy otherwise reads the last group of
an address such as ``2001:db8::2`` as a port.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from lbaas.errors import PermanentError
from lbaas.render.haproxy.inputs import plain_address, plain_cidr


def normalised_address(address: str) -> str:
    """``address`` in canonical form; PermanentError if it is not an IP address HAProxy can
    parse (an IPv6 zone such as ``%eth0`` is refused: it could even hold spaces)."""
    normalised = plain_address(address)
    if normalised is None:
        raise PermanentError(
            f"{address!r} is not a valid IP address.", f"invalid IP address {address!r}"
        )
    return normalised


def normalised_cidr(cidr: str) -> str:
    """``cidr`` as network/prefix with host bits cleared; PermanentError if invalid."""
    normalised = plain_cidr(cidr)
    if normalised is None:
        raise PermanentError(f"{cidr!r} is not a valid CIDR.", f"invalid CIDR {cidr!r}")
    return normalised


def normalised_cidrs(cidrs: Iterable[str]) -> tuple[str, ...]:
    """Distinct CIDRs, normalised and sorted (IPv4 first), so their order never matters."""
    networks = {ipaddress.ip_network(normalised_cidr(cidr)) for cidr in cidrs}
    ordered = sorted(networks, key=lambda n: (n.version, int(n.network_address), n.prefixlen))
    return tuple(str(network) for network in ordered)


def is_ipv6(address: str) -> bool:
    """Whether a (normalised) address is IPv6."""
    return ipaddress.ip_address(address).version == 6


def address_word(address: str) -> str:
    """An address as HAProxy reads it where no port follows (``addr``)."""
    return f"[{address}]" if is_ipv6(address) else address


def address_port_word(address: str, port: int) -> str:
    """``address:port`` as HAProxy reads it on ``bind`` and ``server`` lines."""
    return f"{address_word(address)}:{port}"
