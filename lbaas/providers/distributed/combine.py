"""The nodes' views of a distributed load balancer combined into one ``HealthReport`` (pure).

Each node checks every member itself and balances with what it sees, so the tables never
wait for a vote. What the API shows needs one answer per member, and it is the majority's:
a member is UP when more than half of the nodes that answered see it up. One node with a
broken path to a member (its own link, its own firewall) then does not turn the member
ERROR for everyone, and a member that most nodes cannot reach does show as ERROR even if a
few still reach it. A tie is DOWN: the member fails for half of the clients. Nodes that did
not answer do not vote; no answer at all is no report (``None``).

Listeners are OPEN when the service is on a majority of the answering nodes; their
``total_connections`` is the sum of the flows every node balanced.
"""

from __future__ import annotations

from collections.abc import Sequence

from lbaas.model.graph import ListenerId, LoadBalancer, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from lbaas.wire.l4 import L4ServiceStatus


def member_state(views: Sequence[L4ServiceStatus], member_id: str) -> MemberState | None:
    seen = [view.members[member_id] for view in views if member_id in view.members]
    if not seen:
        return None
    if all(state == "NO_CHECK" for state in seen):
        return MemberState.NO_CHECK
    up = sum(1 for state in seen if state != "DOWN")
    return MemberState.UP if 2 * up > len(seen) else MemberState.DOWN


def combine(
    graph: LoadBalancer, views: Sequence[L4ServiceStatus | None], answered: int
) -> HealthReport | None:
    """The report of ``graph`` from the views of the ``answered`` nodes (None: no view)."""
    carried = [view for view in views if view is not None]
    if answered == 0:
        return None
    pools: dict[PoolId, PoolHealth] = {}
    for pool in graph.pools:
        members: dict[MemberId, MemberState] = {}
        for member in pool.members:
            state = member_state(carried, member.id)
            if state is not None:
                members[member.id] = state
        working = any(s in (MemberState.UP, MemberState.NO_CHECK) for s in members.values())
        pools[pool.id] = PoolHealth(PoolState.UP if working else PoolState.DOWN, members)
    open_state = ListenerState.OPEN if 2 * len(carried) > answered else ListenerState.DOWN
    listeners: dict[ListenerId, ListenerHealth] = {}
    for listener in graph.listeners:
        flows = sum(view.new_flows.get(listener.id, 0) for view in carried)
        counters = ListenerCounters(total_connections=flows)
        listeners[listener.id] = ListenerHealth(open_state, counters)
    return HealthReport(loadbalancer_id=graph.id, listeners=listeners, pools=pools)
