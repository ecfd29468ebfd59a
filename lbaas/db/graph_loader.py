"""Rows → graph: the one conversion from stored rows to ``lbaas.model.graph``.

Converge, the health manager and the stats path all need "the load balancer as it should
be". Objects being deleted (``PENDING_DELETE``) are left out, because the desired state
no longer holds them; everything else is included whatever its status, so that a
successful converge makes the data plane match every object the tenant still has.
"""

from __future__ import annotations

import json

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from lbaas.db.tables import (
    FlavorProfileRow,
    FlavorRow,
    SubnetRow,
    table_of,
)
from lbaas.db.tree_loader import TreeNode, load_tree
from lbaas.model import enums as E
from lbaas.model import graph as G

_SUBNETS = table_of(SubnetRow)
_DELETING = E.ProvisioningStatus.PENDING_DELETE.value


def _live(status: str) -> bool:
    return status != _DELETING and status != E.ProvisioningStatus.DELETED.value


def _member(row: TreeNode) -> G.Member:
    return G.Member(
        id=G.MemberId(row.id),
        address=row.address,
        protocol_port=row.protocol_port,
        name=row.name or "",
        weight=row.weight,
        backup=row.backup,
        admin_state_up=row.admin_state_up,
        subnet_id=G.SubnetId(row.subnet_id) if row.subnet_id else None,
        monitor_address=row.monitor_address,
        monitor_port=row.monitor_port,
    )


def _pool(row: TreeNode) -> G.Pool:
    hm = row.health_monitor
    monitor = None
    if hm is not None and _live(hm.provisioning_status):
        monitor = G.HealthMonitor(
            id=G.HealthMonitorId(hm.id),
            type=E.HealthMonitorType(hm.type),
            delay=hm.delay,
            timeout=hm.timeout,
            max_retries=hm.max_retries,
            max_retries_down=hm.max_retries_down,
            name=hm.name or "",
            http_method=E.HttpMethod(hm.http_method) if hm.http_method else None,
            url_path=hm.url_path,
            expected_codes=hm.expected_codes,
            http_version=hm.http_version,
            domain_name=hm.domain_name,
            admin_state_up=hm.admin_state_up,
        )
    sp = row.session_persistence
    persistence = None
    if sp:
        persistence = G.SessionPersistence(
            type=E.PersistenceType(str(sp["type"])),
            cookie_name=_opt_str(sp.get("cookie_name")),
            persistence_timeout=_opt_int(sp.get("persistence_timeout")),
            persistence_granularity=_opt_str(sp.get("persistence_granularity")),
        )
    return G.Pool(
        id=G.PoolId(row.id),
        protocol=E.PoolProtocol(row.protocol),
        lb_algorithm=E.LbAlgorithm(row.lb_algorithm),
        name=row.name or "",
        admin_state_up=row.admin_state_up,
        session_persistence=persistence,
        members=tuple(_member(m) for m in row.members if _live(m.provisioning_status)),
        health_monitor=monitor,
        tls_enabled=row.tls_enabled,
        tls_container_ref=row.tls_container_ref,
        ca_tls_container_ref=row.ca_tls_container_ref,
        crl_container_ref=row.crl_container_ref,
        tls_ciphers=row.tls_ciphers,
        tls_versions=tuple(row.tls_versions) if row.tls_versions is not None else None,
        alpn_protocols=tuple(row.alpn_protocols) if row.alpn_protocols is not None else None,
    )


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _policy(row: TreeNode) -> G.L7Policy:
    return G.L7Policy(
        id=G.L7PolicyId(row.id),
        action=E.L7PolicyAction(row.action),
        position=row.position,
        name=row.name or "",
        admin_state_up=row.admin_state_up,
        redirect_pool_id=G.PoolId(row.redirect_pool_id) if row.redirect_pool_id else None,
        redirect_url=row.redirect_url,
        redirect_prefix=row.redirect_prefix,
        redirect_http_code=row.redirect_http_code,
        rules=tuple(
            G.L7Rule(
                id=G.L7RuleId(r.id),
                type=E.L7RuleType(r.type),
                compare_type=E.L7CompareType(r.compare_type),
                value=r.value,
                key=r.key,
                invert=r.invert,
                admin_state_up=r.admin_state_up,
            )
            for r in row.rules
            if _live(r.provisioning_status)
        ),
    )


def _listener(row: TreeNode, live_pools: set[G.PoolId]) -> G.Listener:
    default_pool = (
        row.default_pool_id if G.PoolId(row.default_pool_id or "") in live_pools else None
    )
    return G.Listener(
        id=G.ListenerId(row.id),
        protocol=E.ListenerProtocol(row.protocol),
        protocol_port=row.protocol_port,
        name=row.name or "",
        admin_state_up=row.admin_state_up,
        connection_limit=row.connection_limit,
        default_pool_id=G.PoolId(default_pool) if default_pool else None,
        timeouts=G.ListenerTimeouts(
            client_data=row.timeout_client_data,
            member_connect=row.timeout_member_connect,
            member_data=row.timeout_member_data,
            tcp_inspect=row.timeout_tcp_inspect,
        ),
        insert_headers=dict(row.insert_headers or {}),
        allowed_cidrs=tuple(row.allowed_cidrs or ()),
        l7policies=tuple(
            _policy(p)
            for p in sorted(row.l7policies, key=lambda p: p.position)
            if _live(p.provisioning_status)
        ),
        default_tls_container_ref=row.default_tls_container_ref,
        sni_container_refs=tuple(row.sni_container_refs or ()),
        client_ca_tls_container_ref=row.client_ca_tls_container_ref,
        client_authentication=E.ClientAuthentication(row.client_authentication),
        client_crl_container_ref=row.client_crl_container_ref,
        tls_ciphers=row.tls_ciphers,
        tls_versions=tuple(row.tls_versions) if row.tls_versions is not None else None,
        alpn_protocols=tuple(row.alpn_protocols) if row.alpn_protocols is not None else None,
        hsts_max_age=row.hsts_max_age,
        hsts_include_subdomains=row.hsts_include_subdomains,
        hsts_preload=row.hsts_preload,
    )


_FLAVORS, _PROFILES = table_of(FlavorRow).c, table_of(FlavorProfileRow).c
# Built once: every converge reads these.
_FLAVOR_DATA = select(_PROFILES.flavor_data).where(
    _FLAVORS.id == bindparam("flavor_id"), _PROFILES.id == _FLAVORS.flavor_profile_id
)
_SUBNETS_BY_ID = select(_SUBNETS).where(_SUBNETS.c.id.in_(bindparam("ids", expanding=True)))


def _flavor_data(conn: Connection, flavor_id: str | None) -> dict[str, object]:
    if not flavor_id:
        return {}
    stored = conn.execute(_FLAVOR_DATA, {"flavor_id": flavor_id}).scalar()
    if stored is None:
        return {}
    data = json.loads(stored)
    return dict(data) if isinstance(data, dict) else {}


def graph_from_row(conn: Connection, lb: TreeNode) -> G.LoadBalancer:
    """Build the desired graph of an already loaded load balancer row."""
    pools = tuple(_pool(p) for p in lb.pools if _live(p.provisioning_status))
    live_pools = {p.id for p in pools}
    subnet_ids = {lb.vip_subnet_id} | {
        m.subnet_id for p in pools for m in p.members if m.subnet_id is not None
    }
    subnets = tuple(
        G.Subnet(
            id=G.SubnetId(s.id),
            network_id=G.NetworkId(s.network_id),
            cidr=s.cidr,
            gateway_ip=s.gateway_ip,
        )
        for s in conn.execute(_SUBNETS_BY_ID, {"ids": sorted(subnet_ids)})
    )
    return G.LoadBalancer(
        id=G.LoadBalancerId(lb.id),
        project_id=G.ProjectId(lb.project_id),
        provider=lb.provider,
        vip=G.Vip(
            address=lb.vip_address or "",
            subnet_id=G.SubnetId(lb.vip_subnet_id or ""),
            network_id=G.NetworkId(lb.vip_network_id or ""),
            port_id=lb.vip_port_id or "",
        ),
        name=lb.name or "",
        admin_state_up=lb.admin_state_up,
        topology=E.Topology(lb.topology),
        availability_zone=lb.availability_zone,
        flavor=_flavor_data(conn, lb.flavor_id),
        listeners=tuple(
            _listener(li, live_pools) for li in lb.listeners if _live(li.provisioning_status)
        ),
        pools=pools,
        subnets=subnets,
    )


def load_graph(conn: Connection, loadbalancer_id: str) -> G.LoadBalancer | None:
    """The desired graph of a load balancer, or None if it does not exist."""
    tree = load_tree(conn, loadbalancer_id)
    if tree is None:
        return None
    return graph_from_row(conn, tree)
