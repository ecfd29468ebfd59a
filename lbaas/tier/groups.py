"""Groups of the L4 tier: VIPs are placed in groups of nodes, and a node announces the VIPs
of every group it belongs to (TLB's groups of about a thousand VIPs).

Growing a group is adding a node to it: the node must hold the VIPs' tables *before* it
announces them (the caller programs, then announces), after which the router spreads the
VIPs' flows over one more node. Shrinking is the reverse: the node's announcements go first,
its tables after. With direct server return both keep established flows, since every node
of the group sends a flow to the same member; in NAT mode the flows ECMP moves to another
node are lost (their conntrack entry is on the node they left).

Pure: the caller (``lbaas.lab.tier.LabTier.apply_groups``) turns announcements into BIRD.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class TierGroups:
    members: dict[str, set[int]] = field(default_factory=dict)  # group -> node indexes
    placement: dict[str, str] = field(default_factory=dict)  # VIP -> group

    def add_group(self, group: str, nodes: Iterable[int]) -> None:
        if group in self.members:
            raise ValueError(f"group {group} exists")
        self.members[group] = set(nodes)

    def place(self, vip: str, group: str) -> None:
        """Put ``vip`` in ``group`` (moving it if it was elsewhere)."""
        ipaddress.IPv4Address(vip)
        if group not in self.members:
            raise KeyError(f"no group {group}")
        self.placement[vip] = group

    def grow(self, group: str, node: int) -> None:
        self.members[group].add(node)

    def shrink(self, group: str, node: int) -> None:
        if self.members[group] == {node}:
            raise ValueError(f"group {group} would have no node left")
        self.members[group].discard(node)

    def nodes(self) -> set[int]:
        return set().union(*self.members.values()) if self.members else set()

    def vips_of(self, node: int) -> tuple[str, ...]:
        """What ``node`` announces: the VIPs of every group it is in."""
        return tuple(
            sorted(vip for vip, group in self.placement.items() if node in self.members[group])
        )

    def announcements(self, nodes: Iterable[int]) -> dict[int, tuple[str, ...]]:
        """Per node (``nodes``, so a node leaving every group announces nothing)."""
        return {node: self.vips_of(node) for node in nodes}
