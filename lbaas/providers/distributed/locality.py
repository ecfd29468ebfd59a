"""Members on the client's own host: the ``prefer_local_members`` flavor key.

Dragonflow takes the balancing decision on the client's node; with this key it also keeps
the flow on that node when it can. A member is on a host when a port bound to that host
(``binding:host_id``, set through the Networking API as Nova sets it for an instance's
port) holds the member's address, on the member's subnet when the member names one. Each
node's spec marks the members on its own host ``local``, and the node then balances only
those while one of them is healthy (as it sees it), and every primary member otherwise
(``lbaas.l4.service.L4Listener.active_members``). Without the key, or on a node that is
not a fleet host (listed by URL in settings), no member is local.

A binding is read when the load balancer converges. A port bound, moved or deleted later
is noticed by the status poll (``locality_moved``): each node reports the members its spec
marks local, and where that differs from the ports now, the poll queues a converge of the
load balancer, which reads the bindings again and programs every node. The poll itself
programs nothing: its graph may be one read old, and a spec built from it could take a
node back to an older member set.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from lbaas.db.engine import Database
from lbaas.db.network import network_repo
from lbaas.model.graph import LoadBalancer
from lbaas.providers.distributed.base import Binding, HostBindings
from lbaas.providers.distributed.capabilities import PREFER_LOCAL_MEMBERS
from lbaas.wire.l4 import L4ServiceSpec, L4ServiceStatus


class PortHostBindings(HostBindings):
    """The bindings of the ports created through the Networking API (``ports`` table)."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def bindings(self, addresses: Collection[str]) -> dict[str, list[Binding]]:
        with self._database.read() as session:
            ports = network_repo.bound_ports_at(session, sorted(set(addresses)))
            found: dict[str, list[Binding]] = {}
            for port in ports:
                found.setdefault(port.ip_address, []).append(Binding(port.subnet_id, port.host_id))
        return found


class NoHostBindings(HostBindings):
    """No database (a provider built without one): no member is on any host."""

    def bindings(self, addresses: Collection[str]) -> dict[str, list[Binding]]:
        return {}


def prefers_local(graph: LoadBalancer) -> bool:
    """Whether the load balancer's flavor asks for members on the client's own host."""
    return graph.flavor.get(PREFER_LOCAL_MEMBERS) is True


def member_hosts(graph: LoadBalancer, bindings: HostBindings) -> dict[str, frozenset[str]]:
    """Per member id, the hosts it is on; empty unless the flavor prefers local members."""
    if not prefers_local(graph):
        return {}
    members = [m for p in graph.pools for m in p.members]
    found = bindings.bindings([m.address for m in members])
    return {
        m.id: frozenset(
            b.host_id
            for b in found.get(m.address, ())
            if m.subnet_id is None or b.subnet_id == m.subnet_id
        )
        for m in members
        if m.address in found
    }


def localised(
    spec: L4ServiceSpec, hosts: Mapping[str, frozenset[str]], host_id: str | None
) -> L4ServiceSpec:
    """``spec`` as the node on ``host_id`` gets it: the members on that host marked local."""
    local = {member_id for member_id, on in hosts.items() if host_id in on}
    if host_id is None or not local:
        return spec
    listeners = tuple(
        listener.model_copy(
            update={
                "members": tuple(
                    m.model_copy(update={"local": True}) if m.id in local else m
                    for m in listener.members
                )
            }
        )
        for listener in spec.listeners
    )
    return spec.model_copy(update={"listeners": listeners})


def locality_moved(
    view: L4ServiceStatus,
    graph: LoadBalancer,
    hosts: Mapping[str, frozenset[str]],
    host_id: str | None,
) -> bool:
    """Whether the node on ``host_id`` marks other members local than the ports (``hosts``,
    from ``member_hosts``) now put on its host, as ``localised`` would mark them.

    Only members that both the node and ``graph`` have are compared: ``graph`` may be
    older or newer than the node's spec, and a member one of them lacks is the converge's
    business, not a moved port. False when the node did not say (an agent of an earlier
    release leaves ``local_members`` out).
    """
    if view.local_members is None:
        return False
    common = set(view.members) & {m.id for p in graph.pools for m in p.members}
    marked = common.intersection(view.local_members)
    wanted = set() if host_id is None else {m for m in common if host_id in hosts.get(m, ())}
    return marked != wanted
