"""Stored tree → graph: the one conversion from stored rows to ``lbaas.model.graph``.

Converge, the health manager and the stats path all need "the load balancer as it should
be". Objects being deleted (``PENDING_DELETE``) are left out, because the desired state
no longer holds them; everything else is included whatever its status, so that a
successful converge makes the data plane match every object the tenant still has.

A graph field whose stored column has the same name and the same declared type is copied
by name (``copied_fields``), so a new pass-through column needs no line here; fields that are
renamed, typed differently (enums, ids, tuples) or defaulted are converted explicitly. At
import, a same-named pair with different types that is not converted explicitly is an
error, so nothing is copied with the wrong type or silently left at its default.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from lbaas.db.loadbalancers import stored_tree as S
from lbaas.db.loadbalancers.tree_loader import load_tree
from lbaas.db.network.security_group_repo import ingress_rules
from lbaas.db.tables import (
    FlavorProfileRow,
    FlavorRow,
    NetworkRow,
    SubnetRow,
    table_of,
)
from lbaas.model import enums as E
from lbaas.model import graph as G
from lbaas.model.security_rules import IngressRule, listener_sources

_SUBNETS = table_of(SubnetRow)


def copied_fields(
    stored: type[S.StoredObject], built: type[Any], converted: frozenset[str]
) -> Callable[[S.StoredObject], dict[str, Any]]:
    """The same-named, same-typed fields of ``stored`` and ``built``, as keyword arguments.

    ``converted`` names the fields the caller converts itself.
    """
    types = {f.name: f.type for f in fields(stored)}
    names: list[str] = []
    for f in fields(built):
        if f.name in converted or f.name not in types:
            continue
        if types[f.name] != f.type:
            raise TypeError(
                f"{built.__name__}.{f.name} is {f.type} but {stored.__name__}.{f.name} is "
                f"{types[f.name]}: convert it explicitly"
            )
        names.append(f.name)
    if not names:
        return lambda _row: {}
    get = attrgetter(*names)
    if len(names) == 1:
        return lambda row: {names[0]: get(row)}
    return lambda row: dict(zip(names, get(row), strict=True))


def _tuple_or_none(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values is not None else None


_MEMBER = copied_fields(S.StoredMember, G.Member, frozenset({"id", "name", "subnet_id"}))


def _member(row: S.StoredMember) -> G.Member:
    return G.Member(
        **_MEMBER(row),
        id=G.MemberId(row.id),
        name=row.name or "",
        subnet_id=G.SubnetId(row.subnet_id) if row.subnet_id else None,
    )


_HEALTH_MONITOR = copied_fields(
    S.StoredHealthMonitor, G.HealthMonitor, frozenset({"id", "type", "name", "http_method"})
)


def _health_monitor(hm: S.StoredHealthMonitor | None) -> G.HealthMonitor | None:
    if hm is None or not E.is_live(hm.provisioning_status):
        return None
    return G.HealthMonitor(
        **_HEALTH_MONITOR(hm),
        id=G.HealthMonitorId(hm.id),
        type=E.HealthMonitorType(hm.type),
        name=hm.name or "",
        http_method=E.HttpMethod(hm.http_method) if hm.http_method else None,
    )


def _session_persistence(sp: dict[str, object] | None) -> G.SessionPersistence | None:
    if not sp:
        return None
    return G.SessionPersistence(
        type=E.PersistenceType(str(sp["type"])),
        cookie_name=_opt_str(sp.get("cookie_name")),
        persistence_timeout=_opt_int(sp.get("persistence_timeout")),
        persistence_granularity=_opt_str(sp.get("persistence_granularity")),
    )


_POOL = copied_fields(
    S.StoredPool,
    G.Pool,
    frozenset(
        {
            "id",
            "protocol",
            "lb_algorithm",
            "name",
            "session_persistence",
            "members",
            "health_monitor",
            "tls_versions",
            "alpn_protocols",
            "member_down_policy",
        }
    ),
)


def _pool(row: S.StoredPool) -> G.Pool:
    return G.Pool(
        **_POOL(row),
        id=G.PoolId(row.id),
        protocol=E.PoolProtocol(row.protocol),
        lb_algorithm=E.LbAlgorithm(row.lb_algorithm),
        name=row.name or "",
        session_persistence=_session_persistence(row.session_persistence),
        members=tuple(_member(m) for m in row.members if E.is_live(m.provisioning_status)),
        health_monitor=_health_monitor(row.health_monitor),
        tls_versions=_tuple_or_none(row.tls_versions),
        alpn_protocols=_tuple_or_none(row.alpn_protocols),
        member_down_policy=E.MemberDownPolicy(row.member_down_policy),
    )


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: object) -> int | None:
    return None if value is None else int(str(value))


_L7RULE = copied_fields(S.StoredL7Rule, G.L7Rule, frozenset({"id", "type", "compare_type"}))


def _rule(row: S.StoredL7Rule) -> G.L7Rule:
    return G.L7Rule(
        **_L7RULE(row),
        id=G.L7RuleId(row.id),
        type=E.L7RuleType(row.type),
        compare_type=E.L7CompareType(row.compare_type),
    )


_L7POLICY = copied_fields(
    S.StoredL7Policy, G.L7Policy, frozenset({"id", "action", "name", "redirect_pool_id", "rules"})
)


def _policy(row: S.StoredL7Policy) -> G.L7Policy:
    return G.L7Policy(
        **_L7POLICY(row),
        id=G.L7PolicyId(row.id),
        action=E.L7PolicyAction(row.action),
        name=row.name or "",
        redirect_pool_id=G.PoolId(row.redirect_pool_id) if row.redirect_pool_id else None,
        rules=tuple(_rule(r) for r in row.rules if E.is_live(r.provisioning_status)),
    )


_LISTENER = copied_fields(
    S.StoredListener,
    G.Listener,
    frozenset(
        {
            "id",
            "protocol",
            "name",
            "default_pool_id",
            "insert_headers",
            "allowed_cidrs",
            "l7policies",
            "sni_container_refs",
            "client_authentication",
            "tls_versions",
            "alpn_protocols",
        }
    ),
)


def _listener(
    row: S.StoredListener,
    live_pools: set[G.PoolId],
    rules: list[IngressRule] | None,
    vip_version: int,
) -> G.Listener:
    """``rules``: the ingress rules of the load balancer's security groups, None without
    groups; with them, they decide the listener's source networks (``security_rules``)."""
    protocol = E.ListenerProtocol(row.protocol)
    cidrs = tuple(row.allowed_cidrs or ())
    if rules is not None:
        cidrs = listener_sources(rules, protocol, row.protocol_port, vip_version)
    default_pool = (
        row.default_pool_id if G.PoolId(row.default_pool_id or "") in live_pools else None
    )
    return G.Listener(
        **_LISTENER(row),
        id=G.ListenerId(row.id),
        protocol=protocol,
        name=row.name or "",
        default_pool_id=G.PoolId(default_pool) if default_pool else None,
        timeouts=G.ListenerTimeouts(
            client_data=row.timeout_client_data,
            member_connect=row.timeout_member_connect,
            member_data=row.timeout_member_data,
            tcp_inspect=row.timeout_tcp_inspect,
        ),
        insert_headers=dict(row.insert_headers or {}),
        allowed_cidrs=cidrs,
        l7policies=tuple(
            _policy(p)
            for p in sorted(row.l7policies, key=lambda p: p.position)
            if E.is_live(p.provisioning_status)
        ),
        sni_container_refs=tuple(row.sni_container_refs or ()),
        client_authentication=E.ClientAuthentication(row.client_authentication),
        tls_versions=_tuple_or_none(row.tls_versions),
        alpn_protocols=_tuple_or_none(row.alpn_protocols),
    )


_FLAVORS, _PROFILES = table_of(FlavorRow).c, table_of(FlavorProfileRow).c
# Built once: every converge reads these.
_FLAVOR_DATA = select(_PROFILES.flavor_data).where(
    _FLAVORS.id == bindparam("flavor_id"), _PROFILES.id == _FLAVORS.flavor_profile_id
)
_NETWORKS = table_of(NetworkRow)
_SUBNETS_BY_ID = (
    select(_SUBNETS, _NETWORKS.c.mtu)
    .join(_NETWORKS, _NETWORKS.c.id == _SUBNETS.c.network_id)
    .where(_SUBNETS.c.id.in_(bindparam("ids", expanding=True)))
)


def _flavor_data(conn: Connection, flavor_id: str | None) -> dict[str, object]:
    if not flavor_id:
        return {}
    stored = conn.execute(_FLAVOR_DATA, {"flavor_id": flavor_id}).scalar()
    if stored is None:
        return {}
    data = json.loads(stored)
    return dict(data) if isinstance(data, dict) else {}


_LOADBALANCER = copied_fields(
    S.StoredLoadBalancer,
    G.LoadBalancer,
    frozenset({"id", "project_id", "name", "topology", "listeners", "pools"}),
)


def graph_from_tree(conn: Connection, lb: S.StoredLoadBalancer) -> G.LoadBalancer:
    """The desired graph of an already loaded stored tree (reads its flavor and subnets)."""
    pools = tuple(_pool(p) for p in lb.pools if E.is_live(p.provisioning_status))
    live_pools = {p.id for p in pools}
    subnet_ids = {m.subnet_id for p in pools for m in p.members if m.subnet_id is not None}
    if lb.vip_subnet_id is not None:  # (typed rows showed the None that sorted() can't order)
        subnet_ids.add(G.SubnetId(lb.vip_subnet_id))
    subnets = tuple(
        G.Subnet(
            id=G.SubnetId(s.id),
            network_id=G.NetworkId(s.network_id),
            cidr=s.cidr,
            gateway_ip=s.gateway_ip,
            mtu=s.mtu,
        )
        for s in conn.execute(_SUBNETS_BY_ID, {"ids": sorted(subnet_ids)})
    )
    rules = ingress_rules(conn, lb.vip_sg_ids) if lb.vip_sg_ids else None
    vip_version = ipaddress.ip_address(lb.vip_address).version if lb.vip_address else 4
    return G.LoadBalancer(
        **_LOADBALANCER(lb),
        id=G.LoadBalancerId(lb.id),
        project_id=G.ProjectId(lb.project_id),
        vip=G.Vip(
            address=lb.vip_address or "",
            subnet_id=G.SubnetId(lb.vip_subnet_id or ""),
            network_id=G.NetworkId(lb.vip_network_id or ""),
            port_id=lb.vip_port_id or "",
        ),
        name=lb.name or "",
        topology=E.Topology(lb.topology),
        flavor=_flavor_data(conn, lb.flavor_id),
        listeners=tuple(
            _listener(li, live_pools, rules, vip_version)
            for li in lb.listeners
            if E.is_live(li.provisioning_status)
        ),
        pools=pools,
        subnets=subnets,
    )


def load_graph(conn: Connection, loadbalancer_id: str) -> G.LoadBalancer | None:
    """The desired graph of a load balancer, or None if it does not exist."""
    tree = load_tree(conn, loadbalancer_id)
    if tree is None:
        return None
    return graph_from_tree(conn, tree)
