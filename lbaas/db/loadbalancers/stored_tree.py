"""The stored tree: one load balancer's rows, typed, as ``tree_loader`` reads them.

Converge, settle, the health manager (through ``graph_loader.load_graph``) and the API's
``/status`` tree all read a load balancer with its children from here. Each class is a
frozen dataclass whose fields are exactly the columns of its table (same names, the
Python types of ``tables.py``'s ``Mapped[...]``), plus its children, so a misspelt column
is a ``mypy --strict`` error. ``tree_loader`` checks when it is imported that every table
column has its field here and no field lacks a column: adding a column to a table means
adding the same line here, or nothing imports.

Statuses are the stored strings; they compare equal to ``lbaas.model.enums`` members.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from sqlalchemy import Table

from lbaas.db import tables
from lbaas.model.enums import ProvisioningStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredObject:
    """The columns every stored kind has; ``table`` is where it is stored."""

    table: ClassVar[Table]
    id: str
    project_id: str
    admin_state_up: bool
    provisioning_status: str
    operating_status: str
    created_at: datetime
    updated_at: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredL7Rule(StoredObject):
    table: ClassVar[Table] = tables.table_of(tables.L7RuleRow)
    l7policy_id: str
    type: str
    compare_type: str
    key: str | None
    value: str
    invert: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredL7Policy(StoredObject):
    table: ClassVar[Table] = tables.table_of(tables.L7PolicyRow)
    listener_id: str
    name: str | None
    description: str | None
    action: str
    position: int
    redirect_pool_id: str | None
    redirect_url: str | None
    redirect_prefix: str | None
    redirect_http_code: int | None
    rules: tuple[StoredL7Rule, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredListener(StoredObject):
    table: ClassVar[Table] = tables.table_of(tables.ListenerRow)
    loadbalancer_id: str
    name: str | None
    description: str | None
    protocol: str
    protocol_port: int
    connection_limit: int
    default_pool_id: str | None
    timeout_client_data: int
    timeout_member_connect: int
    timeout_member_data: int
    timeout_tcp_inspect: int
    insert_headers: dict[str, str]
    allowed_cidrs: list[str] | None
    default_tls_container_ref: str | None
    sni_container_refs: list[str]
    client_ca_tls_container_ref: str | None
    client_authentication: str
    client_crl_container_ref: str | None
    tls_ciphers: str | None
    tls_versions: list[str] | None
    alpn_protocols: list[str] | None
    hsts_max_age: int | None
    hsts_include_subdomains: bool
    hsts_preload: bool
    l7policies: tuple[StoredL7Policy, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredMember(StoredObject):
    table: ClassVar[Table] = tables.table_of(tables.MemberRow)
    pool_id: str
    name: str | None
    address: str
    protocol_port: int
    weight: int
    backup: bool
    subnet_id: str | None
    monitor_address: str | None
    monitor_port: int | None
    vnic_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredHealthMonitor(StoredObject):
    table: ClassVar[Table] = tables.table_of(tables.HealthMonitorRow)
    pool_id: str
    name: str | None
    type: str
    delay: int
    timeout: int
    max_retries: int
    max_retries_down: int
    http_method: str | None
    url_path: str | None
    expected_codes: str | None
    http_version: float | None
    domain_name: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredPool(StoredObject):
    table: ClassVar[Table] = tables.table_of(tables.PoolRow)
    loadbalancer_id: str
    name: str | None
    description: str | None
    protocol: str
    lb_algorithm: str
    session_persistence: dict[str, object] | None
    tls_enabled: bool
    tls_container_ref: str | None
    ca_tls_container_ref: str | None
    crl_container_ref: str | None
    tls_ciphers: str | None
    tls_versions: list[str] | None
    alpn_protocols: list[str] | None
    member_down_policy: str
    members: tuple[StoredMember, ...]
    health_monitor: StoredHealthMonitor | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredLoadBalancer(StoredObject):
    table: ClassVar[Table] = tables.table_of(tables.LoadBalancerRow)
    name: str | None
    description: str | None
    vip_address: str | None
    vip_port_id: str | None
    vip_subnet_id: str | None
    vip_network_id: str | None
    vip_qos_policy_id: str | None
    vip_sg_ids: list[str]
    additional_vips: list[dict[str, str]]
    provider: str
    flavor_id: str | None
    availability_zone: str | None
    topology: str
    listeners: tuple[StoredListener, ...]
    pools: tuple[StoredPool, ...]


# The fields of each kind that hold children rather than columns.
CHILD_FIELDS = frozenset({"rules", "l7policies", "members", "health_monitor", "listeners", "pools"})
STORED_KINDS: tuple[type[StoredObject], ...] = (
    StoredLoadBalancer,
    StoredListener,
    StoredPool,
    StoredMember,
    StoredHealthMonitor,
    StoredL7Policy,
    StoredL7Rule,
)


def walk(lb: StoredLoadBalancer) -> Iterator[tuple[StoredObject, bool]]:
    """Every object of the tree with whether it is being deleted (itself or a parent).

    Children come before their parents and the load balancer last, the order in which
    rows can be deleted.
    """
    for listener in lb.listeners:
        gone = _doomed(listener, False)
        for policy in listener.l7policies:
            policy_gone = _doomed(policy, gone)
            for rule in policy.rules:
                yield rule, _doomed(rule, policy_gone)
            yield policy, policy_gone
        yield listener, gone
    for pool in lb.pools:
        gone = _doomed(pool, False)
        for member in pool.members:
            yield member, _doomed(member, gone)
        hm = pool.health_monitor
        if hm is not None:
            yield hm, _doomed(hm, gone)
        yield pool, gone
    yield lb, False


def _doomed(row: StoredObject, parents_doomed: bool) -> bool:
    return parents_doomed or row.provisioning_status == ProvisioningStatus.PENDING_DELETE
