"""Which parts of the graph become HAProxy sections, and in which order.

Every listener gets a frontend, enabled or not: a disabled listener (or any listener of a
disabled load balancer) is rendered with HAProxy's ``disabled`` keyword, so it binds no
port, yet the file still shows the whole load balancer and flipping admin_state_up changes
one line. HAProxy leaves disabled proxies out of ``show stat``, so the agent reports such a
listener OFFLINE from the graph, not from statistics.

A pool gets exactly one backend when some listener uses it, as its default pool or as the
target of an enabled L7 policy with rules (``LoadBalancer.pools_of_listener``); a pool used
by two listeners is one backend with one set of servers, checks and runtime state. Pools no
listener uses are not rendered: nothing could reach them.

The order is a pure function of the graph's content, never of the order its lists happen to
come in: frontends by port then id; backends by first use, a listener using its default pool
first and then its policies' pools by position. Rendering the same state twice gives the
same text, so the agent can skip a reload when nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from lbaas.model.graph import Listener, LoadBalancer, Pool, PoolId


@dataclass(frozen=True)
class PoolUse:
    """A pool that gets a backend, with every listener that sends traffic to it."""

    pool: Pool
    listeners: tuple[Listener, ...]


def ordered_listeners(lb: LoadBalancer) -> tuple[Listener, ...]:
    """Listeners in the order their frontends are written: by port, then by id."""
    return tuple(sorted(lb.listeners, key=lambda listener: (listener.protocol_port, listener.id)))


def pools_in_use(lb: LoadBalancer) -> tuple[PoolUse, ...]:
    """Pools some listener uses, in order of first use by the ordered frontends."""
    pools: dict[PoolId, Pool] = {}
    users: dict[PoolId, list[Listener]] = {}
    for listener in ordered_listeners(lb):
        for pool in _pools_by_first_use(lb, listener):
            pools.setdefault(pool.id, pool)
            users.setdefault(pool.id, []).append(listener)
    return tuple(PoolUse(pool, tuple(users[pool_id])) for pool_id, pool in pools.items())


_UNRANKED = (2**63, "")


def _pools_by_first_use(lb: LoadBalancer, listener: Listener) -> list[Pool]:
    first_use: dict[PoolId, tuple[int, str]] = {}
    if listener.default_pool_id is not None:
        first_use[listener.default_pool_id] = (-1, "")
    for policy in sorted(listener.l7policies, key=lambda p: (p.position, p.id)):
        if policy.redirect_pool_id is not None:
            first_use.setdefault(policy.redirect_pool_id, (policy.position, policy.id))
    return sorted(
        lb.pools_of_listener(listener),
        key=lambda pool: (first_use.get(pool.id, _UNRANKED), pool.id),
    )
