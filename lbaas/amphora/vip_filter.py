"""The nftables table of a netns amphora: what its VIP leg lets in, and its UDP flows' way out.

``table ip lbaas_amphora`` in the amphora's namespace, replaced whole in one transaction
(checked with ``nft -c`` first) whenever the listeners change::

    chain vip_in   filter, prerouting, priority -150 (after conntrack, before the L4
                   engine's DNAT, so the destination is still the VIP):
                   on the VIP leg accept replies of known flows, ICMP, each listener's
                   port on the VIP (from its allowed_cidrs when it has some), each
                   extra peer's protocol (VRRP between a pair) and, for a pair's
                   amphora, HAProxy's peers port on its own VRRP address (the health
                   manager's own-address probe, ``lbaas.health.pair_probe``); drop the rest
    chain forward  filter, policy drop: the amphora forwards nothing but the flows the L4
                   engine translated (``ct status dnat``); per UDP listener one counter
                   for each direction (bytes in, bytes out)
    chain postrouting  nat: translated flows leave with the amphora's address on
                   the member's leg (masquerade), so members answer through the amphora
                   whatever their own default route, as LVS-NAT does in Octavia's amphora

IPv4 only, as the L4 engine: an IPv6 VIP is not filtered (and has no UDP listeners).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from lbaas.wire.datapath import HAPROXY_PEER_PORT, ListenerPort, UdpListener, VipFilter

TABLE = "lbaas_amphora"
FORWARD_CHAIN = "forward"


def counter_names(port: int) -> tuple[str, str]:
    """The comments of a UDP listener's two forward counters (bytes in, bytes out)."""
    return f"udp_{port}_in", f"udp_{port}_out"


def _accept_port(vip: str, rule: ListenerPort) -> list[str]:
    """The rule letting the port in: from anywhere, from its IPv4 CIDRs, or (CIDRs that
    are all IPv6: no IPv4 source is allowed) none, so the chain's drop closes it."""
    sources = ""
    if rule.allowed_cidrs:
        ipv4 = [c for c in rule.allowed_cidrs if ipaddress.ip_network(c, strict=False).version == 4]
        if not ipv4:
            return []
        sources = f"ip saddr {{ {', '.join(ipv4)} }} "
    return [f"ip daddr {vip} {sources}{rule.protocol} dport {rule.port} accept"]


def _vip_in(vip: str, device: str, rules: VipFilter, own_address: str | None) -> list[str]:
    guard = f'iifname "{device}"'
    lines = [
        "type filter hook prerouting priority -150; policy accept;",
        f"{guard} ct state established,related accept",
        f"{guard} meta l4proto icmp accept",
    ]
    lines += [
        f"{guard} {line}" for rule in rules.listener_ports for line in _accept_port(vip, rule)
    ]
    lines += [
        f"{guard} ip saddr {peer.address} ip protocol {peer.protocol} accept"
        for peer in rules.peers
    ]
    if own_address is not None and ipaddress.ip_address(own_address).version == 4:
        # HAProxy's peers handshake takes only the pair's peer names (amphora ids): from
        # anyone else a connection shows no more than that this amphora's HAProxy lives.
        lines.append(f"{guard} ip daddr {own_address} tcp dport {HAPROXY_PEER_PORT} accept")
    lines.append(f'{guard} counter drop comment "vip_drop"')
    return lines


def _forward(vip: str, listeners: Sequence[UdpListener]) -> list[str]:
    lines = ["type filter hook forward priority filter; policy drop;"]
    for listener in listeners:
        inbound, outbound = counter_names(listener.port)
        match = f"ct status dnat ct original ip daddr {vip} ct original proto-dst {listener.port}"
        match = f"meta l4proto udp {match}"
        lines.append(f'{match} ct direction original counter accept comment "{inbound}"')
        lines.append(f'{match} ct direction reply counter accept comment "{outbound}"')
    lines.append("ct status dnat accept")
    return lines


def render(
    vip: str,
    vip_device: str,
    rules: VipFilter | None,
    listeners: Sequence[UdpListener],
    own_address: str | None = None,
) -> str:
    """The whole table as one transaction (declare, delete, define: works either way).

    ``rules`` None leaves the VIP leg open (a controller that sends no filter).
    ``own_address``: a pair amphora's VRRP address, whose peers port is let in.
    """
    filtered = rules is not None and ipaddress.ip_address(vip).version == 4
    chains = {
        **(
            {"vip_in": _vip_in(vip, vip_device, rules, own_address)}
            if rules is not None and filtered
            else {}
        ),
        FORWARD_CHAIN: _forward(vip, listeners),
        "postrouting": [
            "type nat hook postrouting priority srcnat; policy accept;",
            "ct status dnat masquerade",
        ],
    }
    out = [f"table ip {TABLE}", f"delete table ip {TABLE}", f"table ip {TABLE} {{"]
    for name, lines in chains.items():
        out.append(f"\tchain {name} {{")
        out.extend(f"\t\t{line}" for line in lines)
        out.append("\t}")
    out.append("}")
    return "\n".join(out) + "\n"


def render_delete() -> str:
    return f"table ip {TABLE}\ndelete table ip {TABLE}\n"


def byte_counters(listing: Mapping[str, Any]) -> dict[str, int]:
    """Bytes per counter comment from ``nft -j list chain ip lbaas_amphora forward``."""
    counts: dict[str, int] = {}
    for item in listing.get("nftables", []):
        rule = item.get("rule")
        if not rule or "comment" not in rule:
            continue
        for expression in rule.get("expr", []):
            if "counter" in expression:
                counts[str(rule["comment"])] = int(expression["counter"]["bytes"])
    return counts
