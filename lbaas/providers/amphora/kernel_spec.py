"""The kernel's part of an amphora's spec: UDP listeners for the L4 engine, the VIP filter.

HAProxy proxies the TCP-family listeners; UDP listeners go to the agent beside the HAProxy
text as ``UdpListener`` data, balanced by the L4 engine inside the amphora's namespace
(Octavia runs LVS for them). ``split_udp`` takes them out of the graph the HAProxy
renderer sees and turns each into the engine's terms:

* members: admin up with weight > 0, backup members marked so: the engine balances them
  only while no primary member is healthy, as HAProxy does with ``backup`` servers; a
  member's id is its Maglev key, so the table keeps its slots across changes;
* ROUND_ROBIN hashes the 5-tuple into the Maglev table (a flow, not a packet, is the unit
  balanced: conntrack keeps each flow on its member); SOURCE_IP, as algorithm or session
  persistence, hashes the source address, masked to ``persistence_granularity``;
  ``persistence_timeout`` has nothing to time out: the hash keeps a client on its member
  for as long as the member set stands, longer than LVS's persistence entries do;
* the pool's admin-up health monitor goes with the listener (``pool_monitor``): the agent
  checks the members with it from inside the amphora's namespace and gives a member it
  finds down no new flows; without one every listed member is balanced;
* ``connection_limit`` (over 0) caps the listener's flows at once, and the shorter of
  ``timeout_client_data`` and ``timeout_member_data`` is its flows' idle timeout
  (``lbaas.l4.listener_limits``); the API refuses the other timeouts unless Octavia's
  defaults, which have no meaning for UDP.

``vip_filter`` lists the port of every enabled listener (TCP or UDP, with its
``allowed_cidrs``): the agent drops the rest of what reaches the VIP.
"""

from __future__ import annotations

import dataclasses
import ipaddress

from lbaas.l4.listener_limits import connection_limit, idle_timeout
from lbaas.model.enums import LbAlgorithm, ListenerProtocol, PersistenceType, PoolProtocol
from lbaas.model.graph import Listener, LoadBalancer, Member, Pool
from lbaas.wire.datapath import ListenerPort, UdpListener, UdpMember, VipFilter
from lbaas.wire.l4_monitor import pool_monitor

#: Maglev slots per UDP listener. Amphora UDP pools are small (DNS, syslog, games):
#: 4099 keeps every member's share within 1 % of its weight's up to 40 members and loads
#: whole in 0.2-0.4 s on this machine, against 0.6-1.1 s for the engine's default 16411
#: (docs/architecture.md, "The L4 engine").
UDP_TABLE_SIZE = 4099


def split_udp(graph: LoadBalancer) -> tuple[LoadBalancer, tuple[UdpListener, ...]]:
    """The graph HAProxy serves (no UDP listener or pool) and the UDP listeners."""
    udp = tuple(
        _udp_listener(graph, listener)
        for listener in graph.listeners
        if listener.protocol is ListenerProtocol.UDP and listener.admin_state_up
    )
    rest = dataclasses.replace(
        graph,
        listeners=tuple(x for x in graph.listeners if x.protocol is not ListenerProtocol.UDP),
        pools=tuple(p for p in graph.pools if p.protocol is not PoolProtocol.UDP),
    )
    return rest, udp


def _udp_listener(graph: LoadBalancer, listener: Listener) -> UdpListener:
    pool = graph.pool(listener.default_pool_id) if listener.default_pool_id else None
    members = _balanced(pool) if pool is not None and pool.admin_state_up else ()
    persistence = None if pool is None else pool.session_persistence
    by_source = pool is not None and (
        pool.lb_algorithm is LbAlgorithm.SOURCE_IP
        or (persistence is not None and persistence.type is PersistenceType.SOURCE_IP)
    )
    granularity = None if persistence is None else persistence.persistence_granularity
    return UdpListener(
        listener_id=listener.id,
        pool_id=None if pool is None else pool.id,
        port=listener.protocol_port,
        hash_key="source_address" if by_source else "five_tuple",
        source_prefix=_prefix_length(granularity) if by_source and granularity else None,
        table_size=UDP_TABLE_SIZE,
        members=tuple(
            UdpMember(
                key=m.id,
                address=m.address,
                port=m.protocol_port,
                weight=m.weight,
                backup=m.backup,
                monitor_address=m.monitor_address,
                monitor_port=m.monitor_port,
            )
            for m in members
        ),
        monitor=pool_monitor(pool) if members else None,
        member_down=pool.member_down_policy.value if pool is not None else "keep",
        connection_limit=connection_limit(listener.connection_limit),
        idle_timeout=idle_timeout(listener.timeouts),
    )


def _balanced(pool: Pool) -> tuple[Member, ...]:
    return tuple(m for m in pool.members if m.admin_state_up and m.weight > 0)


def _prefix_length(netmask: str) -> int:
    """``255.255.255.0`` -> 24 (the API stores Octavia's granularity as a netmask)."""
    return ipaddress.IPv4Network(f"0.0.0.0/{netmask}").prefixlen


def vip_filter(graph: LoadBalancer) -> VipFilter:
    """The ports the VIP accepts: one per enabled listener."""
    ports = tuple(
        ListenerPort(
            protocol="udp" if listener.protocol is ListenerProtocol.UDP else "tcp",
            port=listener.protocol_port,
            # Every CIDR, IPv6 ones included: a list of IPv6 CIDRs only must still close
            # the port to IPv4 sources (``lbaas.amphora.vip_filter`` keeps the IPv4 ones).
            allowed_cidrs=listener.allowed_cidrs,
        )
        for listener in graph.listeners
        if listener.admin_state_up and listener.protocol is not ListenerProtocol.SCTP
    )
    return VipFilter(listener_ports=ports)
