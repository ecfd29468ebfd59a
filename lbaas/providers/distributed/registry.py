"""``NodeDirectory`` from the hosts registry: every UP enrolled agent, plus the settings.

A distributed load balancer must be balanced on every host where a client may start a flow,
so every live host of the fleet carries it: the UP rows of the ``hosts`` table (enrolled
agents that heartbeat; ``lbaas serve`` enrols its own), in host id order. Nodes listed in
``providers.distributed_nodes`` come too (a node that is not an enrolled agent); a listed
URL that is also a host's counts once, as the host. With no UP host and no listed node, the
settings' default (the local agent) is the one node. A host that goes DOWN leaves the list
at the next read; one that comes back (or a new one) is given the load balancers it lacks
by the provider's status poll (``DistributedProvider.report``).
"""

from __future__ import annotations

from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.providers.distributed.base import Node, NodeDirectory


class RegistryNodeDirectory(NodeDirectory):
    def __init__(self, database: Database, listed: NodeDirectory, listed_any: bool) -> None:
        """``listed``: the nodes of settings; ``listed_any``: settings name nodes explicitly
        (else ``listed`` is only the local-agent default, used when no host is UP)."""
        self._database = database
        self._listed = listed
        self._listed_any = listed_any

    def nodes(self) -> list[Node]:
        with self._database.read() as session:
            hosts = host_repo.up_hosts(session)
        found = [Node(h.host_id, h.base_url, host_id=h.host_id) for h in hosts]
        if self._listed_any or not found:
            urls = {node.agent_url for node in found}
            found += [node for node in self._listed.nodes() if node.agent_url not in urls]
        return found
