"""Small builders for graphs and reports, so test tables stay one line per case."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lbaas.model.enums import (
    HealthMonitorType,
    L7CompareType,
    L7PolicyAction,
    L7RuleType,
    LbAlgorithm,
    ListenerProtocol,
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
    LoadBalancer,
    LoadBalancerId,
    Member,
    MemberId,
    NetworkId,
    Pool,
    PoolId,
    ProjectId,
    SubnetId,
    Vip,
)
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)

LB_ID = LoadBalancerId("lb-1")


def member(member_id: str, *, weight: int = 1, admin: bool = True) -> Member:
    return Member(
        id=MemberId(member_id),
        address="192.0.2.10",
        protocol_port=80,
        weight=weight,
        admin_state_up=admin,
    )


def monitor(monitor_id: str = "hm-1", *, admin: bool = True) -> HealthMonitor:
    return HealthMonitor(
        id=HealthMonitorId(monitor_id),
        type=HealthMonitorType.TCP,
        delay=5,
        timeout=3,
        max_retries=3,
        admin_state_up=admin,
    )


def pool(
    pool_id: str,
    members: Sequence[Member] = (),
    *,
    hm: HealthMonitor | None = None,
    admin: bool = True,
) -> Pool:
    return Pool(
        id=PoolId(pool_id),
        protocol=PoolProtocol.HTTP,
        lb_algorithm=LbAlgorithm.ROUND_ROBIN,
        admin_state_up=admin,
        members=tuple(members),
        health_monitor=hm,
    )


def rule(rule_id: str, *, admin: bool = True) -> L7Rule:
    return L7Rule(
        id=L7RuleId(rule_id),
        type=L7RuleType.PATH,
        compare_type=L7CompareType.STARTS_WITH,
        value="/api",
        admin_state_up=admin,
    )


def policy(policy_id: str, rules: Sequence[L7Rule] = (), *, admin: bool = True) -> L7Policy:
    return L7Policy(
        id=L7PolicyId(policy_id),
        action=L7PolicyAction.REJECT,
        position=1,
        admin_state_up=admin,
        rules=tuple(rules),
    )


def listener(
    listener_id: str,
    default_pool: str | None = None,
    *,
    admin: bool = True,
    policies: Sequence[L7Policy] = (),
) -> Listener:
    return Listener(
        id=ListenerId(listener_id),
        protocol=ListenerProtocol.HTTP,
        protocol_port=80,
        admin_state_up=admin,
        default_pool_id=PoolId(default_pool) if default_pool is not None else None,
        l7policies=tuple(policies),
    )


def loadbalancer(
    listeners: Sequence[Listener] = (),
    pools: Sequence[Pool] = (),
    *,
    admin: bool = True,
    lb_id: LoadBalancerId = LB_ID,
) -> LoadBalancer:
    return LoadBalancer(
        id=lb_id,
        project_id=ProjectId("project-1"),
        provider="amphora",
        vip=Vip(
            address="203.0.113.5",
            subnet_id=SubnetId("subnet-1"),
            network_id=NetworkId("net-1"),
            port_id="port-1",
        ),
        admin_state_up=admin,
        listeners=tuple(listeners),
        pools=tuple(pools),
    )


def report(
    listeners: Mapping[str, ListenerState | ListenerHealth] | None = None,
    pools: Mapping[str, tuple[PoolState, Mapping[str, MemberState]]] | None = None,
    *,
    lb_id: LoadBalancerId = LB_ID,
) -> HealthReport:
    return HealthReport(
        loadbalancer_id=lb_id,
        listeners={
            ListenerId(lid): state if isinstance(state, ListenerHealth) else ListenerHealth(state)
            for lid, state in (listeners or {}).items()
        },
        pools={
            PoolId(pid): PoolHealth(
                state=state, members={MemberId(mid): ms for mid, ms in members.items()}
            )
            for pid, (state, members) in (pools or {}).items()
        },
    )


def counters(
    bytes_in: int = 0,
    bytes_out: int = 0,
    active: int = 0,
    connections: int = 0,
    errors: int = 0,
) -> ListenerCounters:
    return ListenerCounters(
        bytes_in=bytes_in,
        bytes_out=bytes_out,
        active_connections=active,
        total_connections=connections,
        request_errors=errors,
    )
