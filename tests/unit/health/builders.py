"""Small builders for graphs and reports, so test tables stay one line per case."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from lbaas.model.enums import HealthMonitorType, L7CompareType, L7PolicyAction, L7RuleType
from lbaas.model.graph import (
    HealthMonitor,
    L7Policy,
    L7Rule,
    Listener,
    ListenerId,
    LoadBalancer,
    LoadBalancerId,
    Member,
    MemberId,
    Pool,
    PoolId,
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
from tests.support import graphs

LB_ID = LoadBalancerId("lb-1")

# The graphs come from tests/support/graphs.py, with the literal ids these tables read best in.


def member(member_id: str, *, weight: int = 1, admin: bool = True) -> Member:
    return graphs.member(member_id, "192.0.2.10", 80, weight=weight, admin=admin, ident=member_id)


def monitor(monitor_id: str = "hm-1", *, admin: bool = True) -> HealthMonitor:
    return graphs.monitor(
        monitor_id, HealthMonitorType.TCP, max_retries=3, admin=admin, ident=monitor_id
    )


def pool(
    pool_id: str,
    members: Sequence[Member] = (),
    *,
    hm: HealthMonitor | None = None,
    admin: bool = True,
) -> Pool:
    return graphs.pool(pool_id, members, hm=hm, admin=admin, ident=pool_id)


def rule(rule_id: str, *, admin: bool = True) -> L7Rule:
    return graphs.rule(
        rule_id, L7RuleType.PATH, L7CompareType.STARTS_WITH, "/api", admin=admin, ident=rule_id
    )


def policy(policy_id: str, rules: Sequence[L7Rule] = (), *, admin: bool = True) -> L7Policy:
    return graphs.policy(policy_id, L7PolicyAction.REJECT, 1, rules, admin=admin, ident=policy_id)


def listener(
    listener_id: str,
    default_pool: str | None = None,
    *,
    admin: bool = True,
    policies: Sequence[L7Policy] = (),
) -> Listener:
    built = graphs.listener(listener_id, admin=admin, policies=policies, ident=listener_id)
    default = PoolId(default_pool) if default_pool is not None else None
    return dataclasses.replace(built, default_pool_id=default)


def loadbalancer(
    listeners: Sequence[Listener] = (),
    pools: Sequence[Pool] = (),
    *,
    admin: bool = True,
    lb_id: LoadBalancerId = LB_ID,
) -> LoadBalancer:
    return graphs.load_balancer(
        listeners, pools, admin=admin, vip_address="203.0.113.5", ident=lb_id
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
