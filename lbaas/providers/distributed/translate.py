"""A load-balancer graph as the L4 service every node programs (pure).

What may carry new flows goes in: a listener and its default pool when the load balancer,
the listener and the pool are admin up; the pool's admin-up members (weight 0 included, so
the node reports them; it gives them no new flows). Backup members go with ``backup``: the
engine balances them only while no primary member is healthy on that node. The hash comes from the pool's algorithm and session
persistence (``lbaas.l4.service.hash_key_for``). A disabled health monitor is no monitor:
members then count as healthy, as with HAProxy. A listener's ``allowed_cidrs`` go as they
are (each node drops other sources before balancing); a UDP listener's timeouts go as the
idle timeout of its flows (``lbaas.l4.listener_limits``). The connection limit and the
other timeouts are refused by the API unless Octavia's default (``capabilities``): each node
balances its own clients, so no node sees the listener's whole count. Which listener fields reach the
spec, and which are refused, is checked over the API schema by
tests/unit/providers/test_no_field_dropped.py.
"""

from __future__ import annotations

from lbaas.l4.listener_limits import idle_timeout
from lbaas.l4.service import DEFAULT_TABLE_SIZE, hash_key_for
from lbaas.model.graph import Listener, LoadBalancer, Pool
from lbaas.wire.l4 import L4ListenerSpec, L4MemberSpec, L4ServiceSpec
from lbaas.wire.l4_monitor import pool_monitor

#: Maglev table sizes a listener may get (primes); see ``table_size_for``.
TABLE_SIZES = (1021, 4099, DEFAULT_TABLE_SIZE, 65537)


def table_size_for(members: int) -> int:
    """The smallest size over 100 slots per member (Maglev's bound for shares within 1 %).

    A few fixed steps rather than the next prime: a table that changes size is rebuilt
    whole (every slot may move, a full nft load), so pools that grow by a few members stay
    on one size, while small pools, the common case, load in a fraction of the 16411-slot
    default's time. Past 655 members the largest size is kept.
    """
    return next((size for size in TABLE_SIZES if size > 100 * members), TABLE_SIZES[-1])


def service_spec(graph: LoadBalancer, version: int) -> L4ServiceSpec:
    pools = {pool.id: pool for pool in graph.pools}
    listeners = tuple(
        _listener(
            listener, pools.get(listener.default_pool_id) if listener.default_pool_id else None
        )
        for listener in graph.listeners
        if graph.admin_state_up and listener.admin_state_up
    )
    return L4ServiceSpec(
        version=version, loadbalancer_id=graph.id, vip=graph.vip.address, listeners=listeners
    )


def _listener(listener: Listener, pool: Pool | None) -> L4ListenerSpec:
    live = pool is not None and pool.admin_state_up
    members = () if pool is None or not live else _members(pool)
    persistence = pool.session_persistence.type if pool and pool.session_persistence else None
    algorithm = pool.lb_algorithm if pool is not None else "SOURCE_IP_PORT"
    udp = listener.protocol.value == "UDP"
    return L4ListenerSpec(
        id=listener.id,
        protocol="udp" if udp else "tcp",
        port=listener.protocol_port,
        hash_key=hash_key_for(algorithm, persistence).value,
        table_size=table_size_for(len(members)),
        members=members,
        monitor=pool_monitor(pool),
        allowed_cidrs=listener.allowed_cidrs,
        member_down=pool.member_down_policy.value if pool is not None else "keep",
        idle_timeout=idle_timeout(listener.timeouts) if udp else None,
    )


def _members(pool: Pool) -> tuple[L4MemberSpec, ...]:
    return tuple(
        L4MemberSpec(
            id=member.id,
            address=member.address,
            port=member.protocol_port,
            weight=member.weight,
            backup=member.backup,
            monitor_address=member.monitor_address,
            monitor_port=member.monitor_port,
        )
        for member in pool.members
        if member.admin_state_up
    )
