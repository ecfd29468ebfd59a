"""Which L4 tier group carries a distributed load balancer's VIP (pure).

With ``tier.groups`` set, traffic with no source node enters through the tier: the router
spreads the VIP's flows over the nodes of one group by ECMP, each of which announces the VIP
over BGP and balances it with the same Maglev table. The group is ``tier.placement``'s
choice for the load balancer when there is one (the operator's override), else its
flavor's ``tier_group`` while that group exists, else a rendezvous hash of (load balancer
id, group name), so every controller places alike, load balancers spread evenly over the
groups, and adding a group moves only the VIPs the new group wins. Replaces the single entry
node (``entry``) of a deployment without a tier.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence


def group_of(
    loadbalancer_id: str,
    groups: Mapping[str, Sequence[str]],
    placement: Mapping[str, str],
    preferred: str | None = None,
) -> str | None:
    """The group of ``loadbalancer_id`` (None: no tier, or a placement to an unknown group);
    ``preferred``: the flavor's group."""
    if loadbalancer_id in placement:
        chosen = placement[loadbalancer_id]
        return chosen if chosen in groups else None
    if preferred in groups:
        return preferred
    return max(groups, key=lambda group: _score(loadbalancer_id, group), default=None)


def announcing_nodes(
    loadbalancer_id: str,
    groups: Mapping[str, Sequence[str]],
    placement: Mapping[str, str],
    preferred: str | None = None,
) -> frozenset[str]:
    """The names of the nodes that announce the load balancer's VIP."""
    group = group_of(loadbalancer_id, groups, placement, preferred)
    return frozenset(groups[group]) if group is not None else frozenset()


def _score(loadbalancer_id: str, group: str) -> bytes:
    return hashlib.blake2b(f"{loadbalancer_id}|{group}".encode(), digest_size=8).digest()
