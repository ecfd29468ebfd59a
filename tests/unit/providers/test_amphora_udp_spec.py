"""The amphora provider's kernel spec: UDP listeners for the L4 engine and the VIP filter."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from lbaas.amphora.datapath import _l4_listener
from lbaas.config import load_settings
from lbaas.db.jobs.job_queue import Claim
from lbaas.model.enums import (
    HealthMonitorType,
    LbAlgorithm,
    ListenerProtocol,
    PersistenceType,
    PoolProtocol,
)
from lbaas.model.graph import NetworkId, SessionPersistence, Subnet, SubnetId
from lbaas.providers.amphora.driver import AmphoraProvider
from lbaas.providers.amphora.kernel_spec import UDP_TABLE_SIZE, split_udp, vip_filter
from lbaas.providers.base import ProviderContext
from tests.support.graphs import listener, load_balancer, member, monitor, pool, uid

from .amphora_fakes import MemoryAmphoraStore, RecordingAgent

UDP = ListenerProtocol.UDP
DNS_MEMBERS = [
    member("d1", "10.9.0.11", 53, weight=2),
    member("d2", "10.9.0.12", 53),
    member("down", "10.9.0.13", 53, admin=False),
    member("drained", "10.9.0.14", 53, weight=0),
    member("spare", "10.9.0.15", 53, backup=True),
]
GRAPH = load_balancer(
    [
        listener(
            "web", port=80, default_pool="web", allowed_cidrs=["192.0.2.0/24", "2001:db8::/32"]
        ),
        listener("dns", UDP, 53, default_pool="dns"),
        listener("off", UDP, 54, default_pool="dns", admin=False),
    ],
    [
        pool("web", [member("a", "10.9.0.21", 8080)], protocol=PoolProtocol.HTTP),
        pool("dns", DNS_MEMBERS, protocol=PoolProtocol.UDP),
    ],
    vip_address="10.8.0.5",
)


def test_udp_listeners_leave_the_haproxy_graph_with_their_enabled_members() -> None:
    rest, udp = split_udp(GRAPH)
    assert [x.protocol for x in rest.listeners] == [ListenerProtocol.HTTP]
    assert [p.protocol for p in rest.pools] == [PoolProtocol.HTTP]
    [dns] = udp  # the admin-down listener is not balanced (and not let in: below)
    assert (dns.port, dns.hash_key, dns.table_size) == (53, "five_tuple", UDP_TABLE_SIZE)
    assert dns.listener_id == uid("listener", "dns") and dns.pool_id == uid("pool", "dns")
    assert [(m.address, m.weight, m.backup) for m in dns.members] == [
        ("10.9.0.11", 2, False),
        ("10.9.0.12", 1, False),
        ("10.9.0.15", 1, True),  # the engine balances it only while no primary is healthy
    ]


def test_backup_members_serve_only_while_no_primary_is_healthy() -> None:
    [dns] = split_udp(GRAPH)[1]
    healthy = {m.key: True for m in dns.members}
    table = _l4_listener(dns, healthy).table()  # as the agent builds it
    assert set(table.shares()) == {uid("member", "d1"), uid("member", "d2")}
    healthy.update({uid("member", "d1"): False, uid("member", "d2"): False})
    table = _l4_listener(dns, healthy).table()
    assert set(table.shares()) == {uid("member", "spare")}


def test_the_pools_enabled_monitor_goes_with_the_udp_listener() -> None:
    [dns] = split_udp(GRAPH)[1]
    assert dns.monitor is None  # no monitor: the agent balances every listed member
    checked = replace(
        GRAPH.pools[1],
        health_monitor=monitor("dns", HealthMonitorType.UDP_CONNECT, delay=3, timeout=2),
        members=(replace(DNS_MEMBERS[0], monitor_address="10.9.1.11", monitor_port=5353),),
    )
    [dns] = split_udp(replace(GRAPH, pools=(GRAPH.pools[0], checked)))[1]
    assert dns.monitor is not None
    assert (dns.monitor.type, dns.monitor.delay, dns.monitor.timeout) == ("UDP-CONNECT", 3, 2)
    assert (dns.monitor.max_retries, dns.monitor.max_retries_down) == (2, 3)
    [only] = dns.members
    assert (only.monitor_address, only.monitor_port) == ("10.9.1.11", 5353)
    disabled = replace(checked, health_monitor=monitor("dns", admin=False))
    [dns] = split_udp(replace(GRAPH, pools=(GRAPH.pools[0], disabled)))[1]
    assert dns.monitor is None  # a disabled monitor is no monitor, as with HAProxy


def test_source_ip_hashes_the_source_masked_to_the_granularity() -> None:
    sticky = SessionPersistence(
        PersistenceType.SOURCE_IP, persistence_timeout=60, persistence_granularity="255.255.255.0"
    )
    dns_pool = replace(GRAPH.pools[1], session_persistence=sticky)
    [dns] = split_udp(replace(GRAPH, pools=(GRAPH.pools[0], dns_pool)))[1]
    assert (dns.hash_key, dns.source_prefix) == ("source_address", 24)
    by_algorithm = replace(GRAPH.pools[1], lb_algorithm=LbAlgorithm.SOURCE_IP)
    [dns] = split_udp(replace(GRAPH, pools=(GRAPH.pools[0], by_algorithm)))[1]
    assert (dns.hash_key, dns.source_prefix) == ("source_address", None)


def test_the_vip_filter_lets_in_each_enabled_listener_port() -> None:
    ports = vip_filter(GRAPH).listener_ports
    assert [(p.protocol, p.port, p.allowed_cidrs) for p in ports] == [
        ("tcp", 80, ("192.0.2.0/24", "2001:db8::/32")),  # the agent keeps the IPv4 ones
        ("udp", 53, ()),
    ]


def test_netns_apply_sends_udp_filter_gateways_and_mtus(tmp_path: Path) -> None:
    store, agent = MemoryAmphoraStore(), RecordingAgent()
    agent.mode = "netns"
    settings = load_settings(
        environ={}, overrides={"state_dir": str(tmp_path), "agent": {"mode": "netns"}}
    )
    client: Any = agent
    provider = AmphoraProvider(ProviderContext(settings), store=store, client=client)
    vip_subnet = Subnet(
        GRAPH.vip.subnet_id, GRAPH.vip.network_id, "10.8.0.0/24", "10.8.0.1", mtu=1400
    )
    members = Subnet(SubnetId("s-m"), NetworkId("n-m"), "10.9.0.0/24", "10.9.0.1", mtu=9000)
    graph = replace(GRAPH, subnets=(vip_subnet, members))
    provider.apply(graph, Claim(GRAPH.id, generation=1, owner="w", attempts=0, rebuild=False))
    [spec] = agent.specs.values()
    assert [x.port for x in spec.udp_listeners] == [53]
    assert spec.vip_filter is not None and len(spec.vip_filter.listener_ports) == 2
    assert spec.vip.gateway == "10.8.0.1"
    assert [(n.gateway, n.mtu) for n in spec.network.member_networks] == [("10.9.0.1", 9000)]
    assert spec.vip.mtu == 1400
    assert "bind 10.8.0.5:53" not in spec.haproxy_config  # HAProxy never sees UDP
    caps = provider.capabilities()
    assert UDP in caps.listener_protocols and PoolProtocol.UDP in caps.pool_protocols
