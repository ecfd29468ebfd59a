"""Which node traffic with no source node enters through (pure).

A client on a node is balanced by its own node's output chain; a client that is on no node
(outside, a provider network) needs one node to answer ARP for the VIP and to balance what
it receives. Dragonflow's seed says "chosen at random"; here it is a random choice that
every controller makes alike: rendezvous hashing, the node whose BLAKE2b of (load balancer
id, agent URL) is largest. Load balancers spread evenly over the nodes, and a choice moves
only when its node leaves the directory (or a new node wins the hash for it), never because
another node came or went. With an L4 tier (``tier.groups``) there is no entry node: the
VIP is announced by the nodes of its group (``placement``) and the router spreads it by ECMP.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from lbaas.providers.distributed.base import Node


def entry_node(loadbalancer_id: str, nodes: Sequence[Node]) -> Node | None:
    """The entry node of ``loadbalancer_id`` among ``nodes`` (None: no node)."""
    return max(nodes, key=lambda node: _score(loadbalancer_id, node), default=None)


def _score(loadbalancer_id: str, node: Node) -> bytes:
    return hashlib.blake2b(f"{loadbalancer_id}|{node.agent_url}".encode(), digest_size=8).digest()
