"""The load-balancer graph: the one typed, immutable shape of a load balancer.

The database stores rows, the API speaks Octavia's JSON, but everything in between —
converge, the providers, the HAProxy renderer, the health roll-up — works on these frozen
dataclasses. A graph holds the *desired* state of one load balancer: converge builds it from
the database leaving out objects being deleted, and a provider makes the data plane match
it. Being frozen and hashable-free of I/O, a graph can be rendered, compared and sent to an
agent without anything changing underneath.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NewType

from lbaas.model.enums import (
    ClientAuthentication,
    HealthMonitorType,
    HttpMethod,
    L7CompareType,
    L7PolicyAction,
    L7RuleType,
    LbAlgorithm,
    ListenerProtocol,
    MemberDownPolicy,
    PersistenceType,
    PoolProtocol,
    Topology,
)

LoadBalancerId = NewType("LoadBalancerId", str)
ListenerId = NewType("ListenerId", str)
PoolId = NewType("PoolId", str)
MemberId = NewType("MemberId", str)
HealthMonitorId = NewType("HealthMonitorId", str)
L7PolicyId = NewType("L7PolicyId", str)
L7RuleId = NewType("L7RuleId", str)
SubnetId = NewType("SubnetId", str)
NetworkId = NewType("NetworkId", str)
AmphoraId = NewType("AmphoraId", str)
ProjectId = NewType("ProjectId", str)


@dataclass(frozen=True)
class Subnet:
    """A subnet of lbaas's network registry, as far as a data plane needs to know it."""

    id: SubnetId
    network_id: NetworkId
    cidr: str
    gateway_ip: str | None = None
    mtu: int | None = None  # the network's


@dataclass(frozen=True)
class Vip:
    address: str
    subnet_id: SubnetId
    network_id: NetworkId
    port_id: str


@dataclass(frozen=True)
class SessionPersistence:
    type: PersistenceType
    cookie_name: str | None = None
    persistence_timeout: int | None = None
    persistence_granularity: str | None = None


@dataclass(frozen=True)
class Member:
    id: MemberId
    address: str
    protocol_port: int
    name: str = ""
    weight: int = 1
    backup: bool = False
    admin_state_up: bool = True
    subnet_id: SubnetId | None = None
    monitor_address: str | None = None
    monitor_port: int | None = None


@dataclass(frozen=True)
class HealthMonitor:
    id: HealthMonitorId
    type: HealthMonitorType
    delay: int
    timeout: int
    max_retries: int
    max_retries_down: int = 3
    name: str = ""
    http_method: HttpMethod | None = None
    url_path: str | None = None
    expected_codes: str | None = None
    http_version: float | None = None
    domain_name: str | None = None
    admin_state_up: bool = True


@dataclass(frozen=True)
class Pool:
    id: PoolId
    protocol: PoolProtocol
    lb_algorithm: LbAlgorithm
    name: str = ""
    admin_state_up: bool = True
    session_persistence: SessionPersistence | None = None
    members: tuple[Member, ...] = ()
    health_monitor: HealthMonitor | None = None
    tls_enabled: bool = False
    tls_container_ref: str | None = None
    ca_tls_container_ref: str | None = None
    crl_container_ref: str | None = None
    tls_ciphers: str | None = None
    tls_versions: tuple[str, ...] | None = None
    alpn_protocols: tuple[str, ...] | None = None
    member_down_policy: MemberDownPolicy = MemberDownPolicy.KEEP


@dataclass(frozen=True)
class L7Rule:
    id: L7RuleId
    type: L7RuleType
    compare_type: L7CompareType
    value: str
    key: str | None = None
    invert: bool = False
    admin_state_up: bool = True


@dataclass(frozen=True)
class L7Policy:
    id: L7PolicyId
    action: L7PolicyAction
    position: int
    name: str = ""
    admin_state_up: bool = True
    redirect_pool_id: PoolId | None = None
    redirect_url: str | None = None
    redirect_prefix: str | None = None
    redirect_http_code: int | None = None
    rules: tuple[L7Rule, ...] = ()


@dataclass(frozen=True)
class ListenerTimeouts:
    """Listener timeouts in milliseconds, with Octavia's defaults."""

    client_data: int = 50000
    member_connect: int = 5000
    member_data: int = 50000
    tcp_inspect: int = 0


@dataclass(frozen=True)
class Listener:
    id: ListenerId
    protocol: ListenerProtocol
    protocol_port: int
    name: str = ""
    admin_state_up: bool = True
    connection_limit: int = -1
    default_pool_id: PoolId | None = None
    timeouts: ListenerTimeouts = field(default_factory=ListenerTimeouts)
    insert_headers: Mapping[str, str] = field(default_factory=dict)
    allowed_cidrs: tuple[str, ...] = ()
    l7policies: tuple[L7Policy, ...] = ()
    default_tls_container_ref: str | None = None
    sni_container_refs: tuple[str, ...] = ()
    client_ca_tls_container_ref: str | None = None
    client_authentication: ClientAuthentication = ClientAuthentication.NONE
    client_crl_container_ref: str | None = None
    tls_ciphers: str | None = None
    tls_versions: tuple[str, ...] | None = None
    alpn_protocols: tuple[str, ...] | None = None
    hsts_max_age: int | None = None
    hsts_include_subdomains: bool = False
    hsts_preload: bool = False

    @property
    def terminates_tls(self) -> bool:
        """TERMINATED_HTTPS, or PROMETHEUS given a certificate (then scraped over TLS)."""
        if self.protocol is ListenerProtocol.TERMINATED_HTTPS:
            return True
        certified = bool(self.default_tls_container_ref or self.sni_container_refs)
        return self.protocol is ListenerProtocol.PROMETHEUS and certified


@dataclass(frozen=True)
class LoadBalancer:
    """The whole desired state of one load balancer: what a provider is asked to apply."""

    id: LoadBalancerId
    project_id: ProjectId
    provider: str
    vip: Vip
    name: str = ""
    admin_state_up: bool = True
    topology: Topology = Topology.SINGLE
    availability_zone: str | None = None
    flavor: Mapping[str, object] = field(default_factory=dict)
    listeners: tuple[Listener, ...] = ()
    pools: tuple[Pool, ...] = ()
    subnets: tuple[Subnet, ...] = ()

    def pool(self, pool_id: PoolId) -> Pool | None:
        """The pool with this id, or None."""
        for pool in self.pools:
            if pool.id == pool_id:
                return pool
        return None

    def pools_of_listener(self, listener: Listener) -> tuple[Pool, ...]:
        """Pools a listener sends traffic to: its default pool and L7 redirect targets.

        Only enabled policies with at least one rule count, as in Octavia's status tree.
        """
        ids: list[PoolId] = []
        if listener.default_pool_id is not None:
            ids.append(listener.default_pool_id)
        for policy in listener.l7policies:
            if (
                policy.admin_state_up
                and policy.rules
                and policy.redirect_pool_id is not None
                and policy.redirect_pool_id not in ids
            ):
                ids.append(policy.redirect_pool_id)
        return tuple(p for p in (self.pool(i) for i in ids) if p is not None)
