"""What a load balancer's security groups (``vip_sg_ids``) let reach each listener (pure).

A VIP with security groups admits, on each listener's port, exactly the sources some
ingress rule of its groups allows for that protocol and port. Every provider already
enforces a listener's source networks (``allowed_cidrs``: HAProxy's ACL, the amphora's VIP
filter, the L4 engine's interval sets, the tier's DSR chain), so the groups are turned
into those networks here, once, when the graph is built; no data plane needs to know what
a security group is. Octavia forbids ``allowed_cidrs`` on a load balancer with groups, so
the two never meet.

What is decided here, and why:

- A rule without ``remote_ip_prefix`` and ``remote_group_id`` admits its whole family
  (``0.0.0.0/0`` or ``::/0``), as Neutron's does.
- A rule with ``remote_group_id`` admits the addresses of the ports in that group. In the
  embedded registry no port carries a group (only VIPs do, and a VIP opens no connection
  to another VIP), so such a rule admits nobody. It is kept, shown and counted as Neutron
  would, so a real Neutron behind the seam (``lbaas/network/base.py``) can fill it in.
- A protocol of None (any) covers every listener; a number or name covers the listeners
  of that IP protocol; ports only narrow protocols that have them. Only rules of the
  VIP's ethertype count (an IPv6 rule admits nobody to an IPv4 VIP).
- No rule covering a listener closes it to everyone. The data planes read an empty
  network list as "no filter", so a closed listener gets ``NO_SOURCE``: the unspecified
  addresses, which no packet that opens a TCP connection or a UDP flow carries as its
  source (RFC 1122 3.2.1.3, RFC 4291 2.5.2), so nobody matches.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from lbaas.model.enums import ListenerProtocol

# IANA protocol numbers of the names Neutron accepts for a rule's protocol.
PROTOCOL_NUMBERS = {
    "ah": 51,
    "dccp": 33,
    "egp": 8,
    "esp": 50,
    "gre": 47,
    "icmp": 1,
    "icmpv6": 58,
    "igmp": 2,
    "ipip": 4,
    "ipv6-encap": 41,
    "ipv6-frag": 44,
    "ipv6-icmp": 58,
    "ipv6-nonxt": 59,
    "ipv6-opts": 60,
    "ipv6-route": 43,
    "ospf": 89,
    "pgm": 113,
    "rsvp": 46,
    "sctp": 132,
    "tcp": 6,
    "udp": 17,
    "udplite": 136,
    "vrrp": 112,
}
# Protocols whose rules may carry a port range (the others' "ports" are ICMP type/code).
PORTED = frozenset({6, 17, 33, 132, 136})
NO_SOURCE = ("0.0.0.0/32", "::/128")
IPV4, IPV6 = "IPv4", "IPv6"


@dataclass(frozen=True)
class IngressRule:
    """An ingress rule as the data planes need it (a protocol number, or None for any)."""

    ethertype: str
    protocol: int | None = None
    port_range_min: int | None = None
    port_range_max: int | None = None
    remote_ip_prefix: str | None = None
    remote_group_id: str | None = None


def protocol_number(protocol: str | None) -> int | None:
    """A rule's stored protocol as a number (None, "any" and 0 mean any); ValueError if
    it is neither a known name nor 0–255."""
    if protocol is None or protocol.lower() in ("", "any"):
        return None
    name = protocol.lower()
    if name in PROTOCOL_NUMBERS:
        return PROTOCOL_NUMBERS[name]
    number = int(name)
    if not 0 <= number <= 255:
        raise ValueError(protocol)
    return number or None


def listener_ip_protocol(protocol: ListenerProtocol) -> int:
    if protocol is ListenerProtocol.UDP:
        return 17
    if protocol is ListenerProtocol.SCTP:
        return 132
    return 6


def _covers(rule: IngressRule, ip_protocol: int, port: int) -> bool:
    if rule.protocol is not None and rule.protocol != ip_protocol:
        return False
    if rule.protocol is None or rule.port_range_min is None:
        return True
    top = rule.port_range_max if rule.port_range_max is not None else rule.port_range_min
    return rule.port_range_min <= port <= top


def listener_sources(
    rules: Iterable[IngressRule], protocol: ListenerProtocol, port: int, vip_version: int
) -> tuple[str, ...]:
    """The networks that may open a flow to a ``protocol`` listener on ``port`` of a VIP of
    IP version ``vip_version`` (rules of the other ethertype cannot reach it, and are left
    out rather than handed to data planes that might map one family onto the other)."""
    ip_protocol = listener_ip_protocol(protocol)
    ethertype = IPV4 if vip_version == 4 else IPV6
    networks: list[str] = []
    for rule in rules:
        if rule.remote_group_id is not None or rule.ethertype != ethertype:
            continue
        if not _covers(rule, ip_protocol, port):
            continue
        whole = "0.0.0.0/0" if ethertype == IPV4 else "::/0"
        network = str(ipaddress.ip_network(rule.remote_ip_prefix or whole, strict=False))
        if network not in networks:
            networks.append(network)
    return tuple(networks) or NO_SOURCE
