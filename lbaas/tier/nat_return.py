"""NAT return: members answer through the node that balanced the flow (the tier's fallback).

With ECMP a member cannot know which node sent it a flow, so in NAT mode the node also
rewrites the source of every flow its L4 engine DNATed to its own address on the member
network (masquerade): the member answers the node, conntrack undoes both rewrites, and the
node sends the answer to the client from the VIP. Members see the node, not the client.
Direct server return (members answering the client themselves) is ``dsr``; the
distributed provider's tier VIPs use it with ``tier.return_mode = dsr``.
"""

from __future__ import annotations

import re

TABLE = "lbaas_tier_return"
_INTERFACE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


def render_nat_return(member_interfaces: tuple[str, ...]) -> str:
    """The node's return table, replacing any earlier one in the same transaction."""
    if not member_interfaces or not all(_INTERFACE.match(name) for name in member_interfaces):
        raise ValueError(f"bad member interfaces: {member_interfaces!r}")
    names = ", ".join(f'"{name}"' for name in member_interfaces)
    return (
        f"table ip {TABLE}\n"
        f"delete table ip {TABLE}\n"
        f"table ip {TABLE} {{\n"
        "  chain postrouting {\n"
        "    type nat hook postrouting priority srcnat; policy accept;\n"
        f"    ct status dnat oifname {{ {names} }} counter masquerade\n"
        "  }\n"
        "}\n"
    )
