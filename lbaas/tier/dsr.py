"""Direct server return: the tier's main return mode, with marks and policy routing only.

TLB's shape without tunnels. A node hashes every packet for a VIP (the listener's Maglev
table: slot -> member) to a firewall *mark* naming the member, and the mark selects a
routing table whose only route goes *via the member's address* on the member network: the
packet leaves unchanged (destination still the VIP), only its L2 destination is the
member's MAC. The member holds the VIP on ``lo`` with ARP off for it and answers the client
itself; the tier never sees a reply.

The mark of a member is its IPv4 address as a 32-bit number, and so is its routing table's
id: every node derives both from the same inputs with no numbering to agree on, and a
member added or removed moves no other member's mark.

Everything happens in a ``raw``-priority prerouting chain with ``notrack``: no conntrack
entry, so no per-flow state at all on the node. A flow ECMP moves to another node (a node
died, a node joined) is hashed there to the same slot and the same member, mid-stream
packets included: nothing depends on conntrack picking up a TCP flow it never saw start.
The L4 engine's NAT chains do not see untracked packets, so a VIP is balanced by one mode;
for the same reason a listener's ``allowed_cidrs`` are checked here too, by an interval set
of its own before the mark rule. With no conntrack every packet is checked, not only a
flow's first: a network taken out of the set cuts its established flows as well.

Pure: text and argument lists out; the lab (``lbaas.lab.tier_dsr``) runs them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lbaas.l4.nft import hash_seed
from lbaas.l4.service import HashKey, L4Listener, L4Protocol, L4Service

TABLE = "lbaas_tier_dsr"
CHAIN = "prerouting"
#: ``ip rule`` priority of the mark rules (before ``main`` at 32766).
RULE_PRIORITY = 1000
_HASH_INPUT = {
    HashKey.FIVE_TUPLE: "ip saddr . th sport . ip daddr . th dport",
    HashKey.SOURCE_ADDRESS: "ip saddr",
}
_RESERVED_TABLES = {0, 253, 254, 255}


def member_mark(member_address: str) -> int:
    """The mark (and routing table id) of a member: its address as a number."""
    mark = int(ipaddress.IPv4Address(member_address))
    if mark in _RESERVED_TABLES:
        raise ValueError(f"no DSR mark for {member_address}")
    return mark


def _map_name(service: L4Service, listener: L4Listener) -> str:
    return f"m{service.lb_id.replace('-', '')[:12]}_{listener.name}"


def _allow_set_name(service: L4Service, listener: L4Listener) -> str:
    return f"a{service.lb_id.replace('-', '')[:12]}_{listener.name}"


def slot_marks(listener: L4Listener) -> list[int]:
    """The mark of every slot of the listener's Maglev table (the member that owns it).

    DSR cannot change the port: a member receives the listener's own port, so members are
    told apart by address only.
    """
    table = listener.table()
    by_key = {member.key: member for member in listener.members}
    marks = [member_mark(by_key[backend.key].address) for backend in table.backends]
    return [marks[index] for index in table.slots]


def _listener_lines(service: L4Service, listener: L4Listener) -> tuple[list[str], list[str]]:
    name = _map_name(service, listener)
    marks = slot_marks(listener)
    maps = [f"\tmap {name} {{", f"\t\ttypeof numgen inc mod {listener.table_size} : meta mark"]
    if marks:
        maps.append("\t\telements = {")
        maps.extend(f"\t\t\t{slot} : {mark:#010x}," for slot, mark in enumerate(marks))
        maps.append("\t\t}")
    maps.append("\t}")
    match = (
        f"ip daddr {service.vip} meta l4proto {listener.protocol.value} th dport {listener.port}"
    )
    rules = []
    if listener.allowed_cidrs:
        allow = _allow_set_name(service, listener)
        maps += [f"\tset {allow} {{", "\t\ttype ipv4_addr; flags interval;"]
        if listener.allowed_ipv4():
            maps += ["\t\telements = {", *(f"\t\t\t{n}," for n in listener.allowed_ipv4())]
            maps.append("\t\t}")
        maps.append("\t}")
        rules.append(f"{match} ip saddr != @{allow} drop")
    if not marks:
        return maps, rules
    if listener.protocol is L4Protocol.TCP:
        # New flows only (a SYN without ACK), the per-node counter of balanced connections.
        rules.append(f'{match} tcp flags & (syn | ack) == syn counter comment "syn {name}"')
    rules.append(
        f"{match} notrack meta mark set jhash {_HASH_INPUT[listener.hash_key]} "
        f"mod {listener.table_size} seed {hash_seed(service.lb_id, listener):#010x} "
        f'map @{name} counter comment "{name}"'
    )
    return maps, rules


def render(services: Sequence[L4Service]) -> str:
    """The node's whole DSR table for ``services``, replacing any earlier one at once."""
    maps: list[str] = []
    rules: list[str] = []
    for service in sorted(services, key=lambda item: item.lb_id):
        for listener in service.listeners:
            if listener.source_prefix not in (None, 32):
                raise ValueError("DSR hashes whole source addresses (no source_prefix)")
            more_maps, more_rules = _listener_lines(service, listener)
            maps += more_maps
            rules += more_rules
    return "\n".join(
        [
            f"table ip {TABLE}",
            f"delete table ip {TABLE}",
            f"table ip {TABLE} {{",
            *maps,
            f"\tchain {CHAIN} {{",
            "\t\ttype filter hook prerouting priority raw; policy accept;",
            *(f"\t\t{rule}" for rule in rules),
            "\t}",
            "}",
            "",
        ]
    )


def member_addresses(services: Iterable[L4Service]) -> list[str]:
    """Every member address a node must be able to route marked packets to."""
    found = {
        member.address
        for service in services
        for listener in service.listeners
        for member in listener.members
    }
    return sorted(found, key=lambda value: int(ipaddress.IPv4Address(value)))


def route_command(member_address: str, interface: str | None = None) -> list[str]:
    """``ip`` arguments: the route of ``member_address``'s mark, via it on ``interface``.

    Without ``interface`` the kernel finds it, and refuses the route (``invalid gateway``)
    unless the member is on-link: a member behind a router cannot be reached at L2.
    """
    mark = str(member_mark(member_address))
    device = ["dev", interface] if interface is not None else []
    return ["route", "replace", "default", "via", member_address, *device, "table", mark]


def flush_command(member_address: str) -> list[str]:
    """``ip`` arguments removing every route of ``member_address``'s table."""
    return ["route", "flush", "table", str(member_mark(member_address))]


def rule_command(member_address: str, verb: str) -> list[str]:
    """``ip`` arguments adding (``add``) or deleting (``del``) a member's mark rule."""
    if verb not in ("add", "del"):
        raise ValueError(f"not an ip rule verb: {verb}")
    mark = str(member_mark(member_address))
    return ["rule", verb, "fwmark", mark, "lookup", mark, "priority", str(RULE_PRIORITY)]


def member_sysctls(interfaces: Iterable[str]) -> list[str]:
    """A member's ARP and reverse-path settings for holding VIPs on ``lo``.

    ``arp_ignore=1``: answer ARP only for addresses of the interface asked on (never for a
    VIP on ``lo``); ``arp_announce=2``: never use a VIP as the source of its own ARP
    requests. ``rp_filter=2`` (loose): a client's packet arrives on the member network
    while the route back to the client leaves by another interface.
    """
    settings = []
    for name in ("all", *interfaces):
        settings += [
            f"net.ipv4.conf.{name}.arp_ignore=1",
            f"net.ipv4.conf.{name}.arp_announce=2",
            f"net.ipv4.conf.{name}.rp_filter=2",
        ]
    return settings


def new_flow_counts(listing: Mapping[str, Any]) -> dict[str, int]:
    """New TCP flows per listener map from ``nft -j list chain ip lbaas_tier_dsr prerouting``."""
    counts: dict[str, int] = {}
    for item in listing.get("nftables", []):
        rule = item.get("rule")
        comment = rule.get("comment", "") if rule else ""
        if not comment.startswith("syn "):
            continue
        for expression in rule.get("expr", []):
            if "counter" in expression:
                counts[comment[4:]] = int(expression["counter"]["packets"])
    return counts
