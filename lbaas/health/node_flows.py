"""A distributed listener's ``total_connections``: each node's flows, kept like an amphora's.

The status poll reads every node once a round (``DistributedProvider.node_views``); a
node's view of a load balancer carries the flows its rules balanced per listener since its
table was last loaded. Each node's numbers are folded into a ``listener_stats`` record of
their own, under an id derived from the node's name, exactly as one amphora's counters
are (``fold_report``): a count that goes down (the node's table reloaded, its agent
restarted) carries what was counted into the record's base, so nothing counted is lost,
and the listener's stats are the sum of its records, as for amphorae. Summing the nodes
first and folding the sum would not do: a node that missed one round would look like a
reset, and its flows would be counted twice when it answered again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from functools import partial

from lbaas.health.counters import fold_report
from lbaas.health.store import HealthStore
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancer
from lbaas.model.health import ListenerCounters
from lbaas.wire.l4 import L4ServiceStatus

#: A node's records never change epoch: a reset shows as counts going down.
EPOCH = 0


def node_record_id(node: str) -> AmphoraId:
    """The ``listener_stats`` key of one node's counts (the table's amphora id column)."""
    return AmphoraId(str(uuid.uuid5(uuid.NAMESPACE_URL, f"lbaas-l4-node:{node}")))


def fold_node_flows(
    store: HealthStore,
    graph: LoadBalancer,
    by_node: Mapping[str, Mapping[str, L4ServiceStatus] | None],
) -> int:
    """Fold each answering node's flows for ``graph``'s listeners; how many nodes counted.
    A node asked per load balancer (``None``: an agent of an earlier release) is skipped."""
    known = {listener.id for listener in graph.listeners}
    folded = 0
    for node, views in by_node.items():
        view = None if views is None else views.get(graph.id)
        if view is None:
            continue
        reported = {
            ListenerId(lid): ListenerCounters(total_connections=flows)
            for lid, flows in view.new_flows.items()
            if lid in known
        }
        if reported:
            update = partial(fold_report, epoch=EPOCH, reported=reported)
            store.update_listener_counters(node_record_id(node), graph.id, update)
            folded += 1
    return folded
