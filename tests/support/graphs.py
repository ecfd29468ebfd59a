"""The one builder of ``lbaas.model.graph`` load balancers for tests.

Ids look like the UUIDs the API hands out, but are derived from a readable label
(``uid("pool", "web")``), so a test can name an object and the renderer's golden files stay
stable from one run to the next; ``ident=`` gives an object a literal id instead (the health
tests name theirs "pool-1"). Each builder takes the fields that tests vary as keywords and
leaves the rest at the API's defaults.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from lbaas.model.enums import (
    HealthMonitorType,
    HttpMethod,
    L7CompareType,
    L7PolicyAction,
    L7RuleType,
    LbAlgorithm,
    ListenerProtocol,
    PersistenceType,
    PoolProtocol,
)
from lbaas.model.graph import (
    HealthMonitor,
    HealthMonitorId,
    L7Policy,
    L7PolicyId,
    L7Rule,
    L7RuleId,
    Listener,
    ListenerId,
    ListenerTimeouts,
    LoadBalancer,
    LoadBalancerId,
    Member,
    MemberId,
    NetworkId,
    Pool,
    PoolId,
    ProjectId,
    SessionPersistence,
    SubnetId,
    Vip,
)

_NAMESPACE = uuid.UUID("6f1c7a52-3e0d-4f4e-9a55-2b7c1d0e8a31")
VIP_ADDRESS = "127.0.10.5"


def uid(kind: str, label: str) -> str:
    """A stable UUID-shaped id for the object of this kind with this label."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}/{label}"))


def member(
    label: str,
    address: str,
    port: int = 8080,
    *,
    weight: int = 1,
    backup: bool = False,
    admin: bool = True,
    monitor_address: str | None = None,
    monitor_port: int | None = None,
    ident: str | None = None,
) -> Member:
    return Member(
        id=MemberId(ident or uid("member", label)),
        address=address,
        protocol_port=port,
        name=label,
        weight=weight,
        backup=backup,
        admin_state_up=admin,
        monitor_address=monitor_address,
        monitor_port=monitor_port,
    )


def monitor(
    label: str,
    kind: HealthMonitorType = HealthMonitorType.TCP,
    *,
    delay: int = 5,
    timeout: int = 3,
    max_retries: int = 2,
    max_retries_down: int = 3,
    method: HttpMethod | None = None,
    url_path: str | None = None,
    expected_codes: str | None = None,
    http_version: float | None = None,
    domain_name: str | None = None,
    admin: bool = True,
    ident: str | None = None,
) -> HealthMonitor:
    return HealthMonitor(
        id=HealthMonitorId(ident or uid("monitor", label)),
        type=kind,
        delay=delay,
        timeout=timeout,
        max_retries=max_retries,
        max_retries_down=max_retries_down,
        http_method=method,
        url_path=url_path,
        expected_codes=expected_codes,
        http_version=http_version,
        domain_name=domain_name,
        admin_state_up=admin,
    )


def persistence(kind: PersistenceType, cookie_name: str | None = None) -> SessionPersistence:
    return SessionPersistence(type=kind, cookie_name=cookie_name)


def pool(
    label: str,
    members: Sequence[Member] = (),
    *,
    protocol: PoolProtocol = PoolProtocol.HTTP,
    algorithm: LbAlgorithm = LbAlgorithm.ROUND_ROBIN,
    hm: HealthMonitor | None = None,
    sticky: SessionPersistence | None = None,
    admin: bool = True,
    tls_enabled: bool = False,
    ident: str | None = None,
) -> Pool:
    return Pool(
        id=PoolId(ident or uid("pool", label)),
        protocol=protocol,
        lb_algorithm=algorithm,
        name=label,
        admin_state_up=admin,
        session_persistence=sticky,
        members=tuple(members),
        health_monitor=hm,
        tls_enabled=tls_enabled,
    )


def rule(
    label: str,
    kind: L7RuleType,
    compare: L7CompareType,
    value: str,
    *,
    key: str | None = None,
    invert: bool = False,
    admin: bool = True,
    ident: str | None = None,
) -> L7Rule:
    return L7Rule(
        id=L7RuleId(ident or uid("rule", label)),
        type=kind,
        compare_type=compare,
        value=value,
        key=key,
        invert=invert,
        admin_state_up=admin,
    )


def policy(
    label: str,
    action: L7PolicyAction,
    position: int,
    rules: Sequence[L7Rule],
    *,
    redirect_pool: str | None = None,
    redirect_url: str | None = None,
    redirect_prefix: str | None = None,
    redirect_http_code: int | None = None,
    admin: bool = True,
    ident: str | None = None,
) -> L7Policy:
    return L7Policy(
        id=L7PolicyId(ident or uid("policy", label)),
        action=action,
        position=position,
        name=label,
        admin_state_up=admin,
        redirect_pool_id=None if redirect_pool is None else PoolId(uid("pool", redirect_pool)),
        redirect_url=redirect_url,
        redirect_prefix=redirect_prefix,
        redirect_http_code=redirect_http_code,
        rules=tuple(rules),
    )


def listener(
    label: str,
    protocol: ListenerProtocol = ListenerProtocol.HTTP,
    port: int = 80,
    *,
    default_pool: str | None = None,
    admin: bool = True,
    connection_limit: int = -1,
    timeouts: ListenerTimeouts | None = None,
    insert_headers: Mapping[str, str] | None = None,
    allowed_cidrs: Sequence[str] = (),
    policies: Sequence[L7Policy] = (),
    default_tls_container_ref: str | None = None,
    ident: str | None = None,
) -> Listener:
    return Listener(
        id=ListenerId(ident or uid("listener", label)),
        protocol=protocol,
        protocol_port=port,
        name=label,
        admin_state_up=admin,
        connection_limit=connection_limit,
        default_pool_id=None if default_pool is None else PoolId(uid("pool", default_pool)),
        timeouts=timeouts or ListenerTimeouts(),
        insert_headers=dict(insert_headers or {}),
        allowed_cidrs=tuple(allowed_cidrs),
        l7policies=tuple(policies),
        default_tls_container_ref=default_tls_container_ref,
    )


def load_balancer(
    listeners: Sequence[Listener] = (),
    pools: Sequence[Pool] = (),
    *,
    label: str = "lb",
    admin: bool = True,
    vip_address: str = VIP_ADDRESS,
    ident: str | None = None,
) -> LoadBalancer:
    return LoadBalancer(
        id=LoadBalancerId(ident or uid("loadbalancer", label)),
        project_id=ProjectId(uid("project", "tenant")),
        provider="amphora",
        vip=Vip(
            address=vip_address,
            subnet_id=SubnetId(uid("subnet", "vip")),
            network_id=NetworkId(uid("network", "vip")),
            port_id=uid("port", "vip"),
        ),
        name=label,
        admin_state_up=admin,
        listeners=tuple(listeners),
        pools=tuple(pools),
    )
