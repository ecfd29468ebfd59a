"""SQLAlchemy tables: the stored desired state, the network registry and the job queue.

Rows here are an implementation detail of ``lbaas.db``; the rest of the code sees the
domain graph (``lbaas.model``) built by ``lbaas.db.loadbalancers.graph_loader`` and the API's views.
Column names follow the Octavia API names where they are the same thing, so filters and
sort keys map one to one. Tags live in one table keyed by the tagged object's id (ids are
UUIDs, unique across kinds), which lets every tag filter be an EXISTS sub-query.
"""

# size: one declarative table per stored kind; splitting them would only scatter the schema.

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
    event,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from lbaas.db.counter_totals import record_totals


class Base(DeclarativeBase):
    pass


def _id() -> Mapped[str]:
    return mapped_column(String(36), primary_key=True)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class StatusMixin(TimestampMixin):
    provisioning_status: Mapped[str] = mapped_column(String(16), nullable=False, index=True)
    operating_status: Mapped[str] = mapped_column(String(16), nullable=False)


class LoadBalancerRow(StatusMixin, Base):
    __tablename__ = "load_balancers"
    # The lists' order (``db.listing``): a page of 1,000 reads 1,000 index entries instead
    # of sorting every load balancer (issue 34: 10,000 and more); a tenant's list reads
    # its own in order (with the first alone, a prepared statement's generic plan walked
    # every load balancer to find a project's 50).
    __table_args__ = (
        Index("ix_load_balancers_created_id", "created_at", "id"),
        Index("ix_load_balancers_project_created_id", "project_id", "created_at", "id"),
    )

    id: Mapped[str] = _id()
    # No index of its own: ix_load_balancers_project_created_id begins with it (0012).
    project_id: Mapped[str] = mapped_column(String(36), nullable=False)
    name: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(String(255))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, nullable=False)
    vip_address: Mapped[str | None] = mapped_column(String(64))
    vip_port_id: Mapped[str | None] = mapped_column(String(36))
    vip_subnet_id: Mapped[str | None] = mapped_column(String(36))
    vip_network_id: Mapped[str | None] = mapped_column(String(36))
    vip_qos_policy_id: Mapped[str | None] = mapped_column(String(36))
    vip_sg_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    additional_vips: Mapped[list[dict[str, str]]] = mapped_column(
        JSON, nullable=False, default=list
    )
    provider: Mapped[str] = mapped_column(String(64), nullable=False)
    flavor_id: Mapped[str | None] = mapped_column(String(36))
    availability_zone: Mapped[str | None] = mapped_column(String(255))
    topology: Mapped[str] = mapped_column(String(16), nullable=False, default="SINGLE")


class ListenerRow(StatusMixin, Base):
    __tablename__ = "listeners"
    __table_args__ = (Index("ix_listeners_lb", "loadbalancer_id"),)

    id: Mapped[str] = _id()
    loadbalancer_id: Mapped[str] = mapped_column(ForeignKey("load_balancers.id"), nullable=False)
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    name: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(String(255))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, nullable=False)
    protocol: Mapped[str] = mapped_column(String(32), nullable=False)
    protocol_port: Mapped[int] = mapped_column(Integer, nullable=False)
    connection_limit: Mapped[int] = mapped_column(Integer, nullable=False)
    default_pool_id: Mapped[str | None] = mapped_column(ForeignKey("pools.id"))
    timeout_client_data: Mapped[int] = mapped_column(Integer, nullable=False)
    timeout_member_connect: Mapped[int] = mapped_column(Integer, nullable=False)
    timeout_member_data: Mapped[int] = mapped_column(Integer, nullable=False)
    timeout_tcp_inspect: Mapped[int] = mapped_column(Integer, nullable=False)
    insert_headers: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False, default=dict)
    allowed_cidrs: Mapped[list[str] | None] = mapped_column(JSON)
    default_tls_container_ref: Mapped[str | None] = mapped_column(String(255))
    sni_container_refs: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    client_ca_tls_container_ref: Mapped[str | None] = mapped_column(String(255))
    client_authentication: Mapped[str] = mapped_column(String(16), nullable=False)
    client_crl_container_ref: Mapped[str | None] = mapped_column(String(255))
    tls_ciphers: Mapped[str | None] = mapped_column(String(2048))
    tls_versions: Mapped[list[str] | None] = mapped_column(JSON)
    alpn_protocols: Mapped[list[str] | None] = mapped_column(JSON)
    hsts_max_age: Mapped[int | None] = mapped_column(Integer)
    hsts_include_subdomains: Mapped[bool] = mapped_column(Boolean, nullable=False)
    hsts_preload: Mapped[bool] = mapped_column(Boolean, nullable=False)


class PoolRow(StatusMixin, Base):
    __tablename__ = "pools"
    __table_args__ = (Index("ix_pools_lb", "loadbalancer_id"),)

    id: Mapped[str] = _id()
    loadbalancer_id: Mapped[str] = mapped_column(ForeignKey("load_balancers.id"), nullable=False)
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    name: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(String(255))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, nullable=False)
    protocol: Mapped[str] = mapped_column(String(16), nullable=False)
    lb_algorithm: Mapped[str] = mapped_column(String(32), nullable=False)
    session_persistence: Mapped[dict[str, object] | None] = mapped_column(JSON)
    tls_enabled: Mapped[bool] = mapped_column(Boolean, nullable=False)
    tls_container_ref: Mapped[str | None] = mapped_column(String(255))
    ca_tls_container_ref: Mapped[str | None] = mapped_column(String(255))
    crl_container_ref: Mapped[str | None] = mapped_column(String(255))
    tls_ciphers: Mapped[str | None] = mapped_column(String(2048))
    tls_versions: Mapped[list[str] | None] = mapped_column(JSON)
    alpn_protocols: Mapped[list[str] | None] = mapped_column(JSON)
    # lbaas extension (``MemberDownPolicy``); "keep" for rows made before it existed.
    member_down_policy: Mapped[str] = mapped_column(
        String(16), nullable=False, default="keep", server_default="keep"
    )


class MemberRow(StatusMixin, Base):
    __tablename__ = "members"
    __table_args__ = (
        UniqueConstraint("pool_id", "address", "protocol_port", name="uq_member_address_port"),
    )

    id: Mapped[str] = _id()
    pool_id: Mapped[str] = mapped_column(ForeignKey("pools.id"), nullable=False, index=True)
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    name: Mapped[str | None] = mapped_column(String(255))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, nullable=False)
    address: Mapped[str] = mapped_column(String(64), nullable=False)
    protocol_port: Mapped[int] = mapped_column(Integer, nullable=False)
    weight: Mapped[int] = mapped_column(Integer, nullable=False)
    backup: Mapped[bool] = mapped_column(Boolean, nullable=False)
    subnet_id: Mapped[str | None] = mapped_column(String(36))
    monitor_address: Mapped[str | None] = mapped_column(String(64))
    monitor_port: Mapped[int | None] = mapped_column(Integer)
    vnic_type: Mapped[str] = mapped_column(String(16), nullable=False, default="normal")


class HealthMonitorRow(StatusMixin, Base):
    __tablename__ = "health_monitors"

    id: Mapped[str] = _id()
    pool_id: Mapped[str] = mapped_column(ForeignKey("pools.id"), nullable=False, unique=True)
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    name: Mapped[str | None] = mapped_column(String(255))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, nullable=False)
    type: Mapped[str] = mapped_column(String(16), nullable=False)
    delay: Mapped[int] = mapped_column(Integer, nullable=False)
    timeout: Mapped[int] = mapped_column(Integer, nullable=False)
    max_retries: Mapped[int] = mapped_column(Integer, nullable=False)
    max_retries_down: Mapped[int] = mapped_column(Integer, nullable=False)
    http_method: Mapped[str | None] = mapped_column(String(16))
    url_path: Mapped[str | None] = mapped_column(String(2048))
    expected_codes: Mapped[str | None] = mapped_column(String(64))
    http_version: Mapped[float | None] = mapped_column(Float)
    domain_name: Mapped[str | None] = mapped_column(String(255))


class L7PolicyRow(StatusMixin, Base):
    __tablename__ = "l7policies"

    id: Mapped[str] = _id()
    listener_id: Mapped[str] = mapped_column(ForeignKey("listeners.id"), nullable=False, index=True)
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    name: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(String(255))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, nullable=False)
    action: Mapped[str] = mapped_column(String(32), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    redirect_pool_id: Mapped[str | None] = mapped_column(ForeignKey("pools.id"))
    redirect_url: Mapped[str | None] = mapped_column(String(2048))
    redirect_prefix: Mapped[str | None] = mapped_column(String(2048))
    redirect_http_code: Mapped[int | None] = mapped_column(Integer)


class L7RuleRow(StatusMixin, Base):
    __tablename__ = "l7rules"

    id: Mapped[str] = _id()
    l7policy_id: Mapped[str] = mapped_column(
        ForeignKey("l7policies.id"), nullable=False, index=True
    )
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    admin_state_up: Mapped[bool] = mapped_column(Boolean, nullable=False)
    type: Mapped[str] = mapped_column(String(32), nullable=False)
    compare_type: Mapped[str] = mapped_column(String(32), nullable=False)
    key: Mapped[str | None] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(String(255), nullable=False)
    invert: Mapped[bool] = mapped_column(Boolean, nullable=False)


class TagRow(Base):
    __tablename__ = "tags"

    resource_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tag: Mapped[str] = mapped_column(String(255), primary_key=True)


class QuotaRow(Base):
    __tablename__ = "quotas"

    project_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    loadbalancer: Mapped[int | None] = mapped_column(Integer)
    listener: Mapped[int | None] = mapped_column(Integer)
    pool: Mapped[int | None] = mapped_column(Integer)
    member: Mapped[int | None] = mapped_column(Integer)
    healthmonitor: Mapped[int | None] = mapped_column(Integer)
    l7policy: Mapped[int | None] = mapped_column(Integer)
    l7rule: Mapped[int | None] = mapped_column(Integer)


class ProfileMixin:
    """A provider's data behind flavors or zones; the data column is named by its kind."""

    id: Mapped[str] = _id()
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    provider_name: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class FlavorProfileRow(ProfileMixin, Base):
    __tablename__ = "flavor_profiles"

    flavor_data: Mapped[str] = mapped_column(String(4096), nullable=False)


class FlavorRow(Base):
    __tablename__ = "flavors"

    id: Mapped[str] = _id()
    name: Mapped[str] = mapped_column(String(255), nullable=False, unique=True)
    description: Mapped[str | None] = mapped_column(String(255))
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False)
    flavor_profile_id: Mapped[str] = mapped_column(ForeignKey("flavor_profiles.id"), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class AvailabilityZoneProfileRow(ProfileMixin, Base):
    __tablename__ = "availability_zone_profiles"

    availability_zone_data: Mapped[str] = mapped_column(String(4096), nullable=False)


class AvailabilityZoneRow(Base):
    __tablename__ = "availability_zones"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    description: Mapped[str | None] = mapped_column(String(255))
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False)
    availability_zone_profile_id: Mapped[str] = mapped_column(
        ForeignKey("availability_zone_profiles.id"), nullable=False
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class NetworkRow(Base):
    __tablename__ = "networks"

    id: Mapped[str] = _id()
    name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    project_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    # The network's MTU, as Neutron's networks carry it; None: not declared (the links'
    # own default applies). Amphora legs on the network take it (netns mode).
    mtu: Mapped[int | None] = mapped_column(Integer)


class SubnetRow(Base):
    __tablename__ = "subnets"

    id: Mapped[str] = _id()
    network_id: Mapped[str] = mapped_column(ForeignKey("networks.id"), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    cidr: Mapped[str] = mapped_column(String(64), nullable=False)
    ip_version: Mapped[int] = mapped_column(Integer, nullable=False)
    gateway_ip: Mapped[str | None] = mapped_column(String(64))
    project_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class PortRow(Base):
    """An allocated address on a subnet (a VIP, or an amphora's leg)."""

    __tablename__ = "ports"
    __table_args__ = (UniqueConstraint("subnet_id", "ip_address", name="uq_port_subnet_ip"),)

    id: Mapped[str] = _id()
    network_id: Mapped[str] = mapped_column(String(36), nullable=False)
    subnet_id: Mapped[str] = mapped_column(ForeignKey("subnets.id"), nullable=False)
    ip_address: Mapped[str] = mapped_column(String(64), nullable=False)
    device_owner: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    device_id: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    # Ports created through the Networking API (an instance's, for the metadata proxy):
    # their owner, name and DNS name (the instance's hostname), and the host they are
    # bound to (``binding:host_id``), which decides where a metadata proxy must run.
    name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    project_id: Mapped[str | None] = mapped_column(String(36))
    host_id: Mapped[str] = mapped_column(String(255), nullable=False, default="", index=True)
    dns_name: Mapped[str] = mapped_column(String(255), nullable=False, default="")


class SecurityGroupRow(TimestampMixin, Base):
    """A tenant's security group (Neutron's shape); a load balancer names it in
    ``vip_sg_ids`` and its VIP then admits what the group's ingress rules allow."""

    __tablename__ = "security_groups"

    id: Mapped[str] = _id()
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    description: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    stateful: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)


class SecurityGroupRuleRow(Base):
    """One rule of a security group. ``protocol`` is stored as sent (a name or a number,
    or None for any); the ports only mean something for protocols that have ports."""

    __tablename__ = "security_group_rules"

    id: Mapped[str] = _id()
    security_group_id: Mapped[str] = mapped_column(
        ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False, index=True
    )
    project_id: Mapped[str] = mapped_column(String(36), nullable=False)
    direction: Mapped[str] = mapped_column(String(16), nullable=False)
    ethertype: Mapped[str] = mapped_column(String(8), nullable=False)
    protocol: Mapped[str | None] = mapped_column(String(40))
    port_range_min: Mapped[int | None] = mapped_column(Integer)
    port_range_max: Mapped[int | None] = mapped_column(Integer)
    remote_ip_prefix: Mapped[str | None] = mapped_column(String(64))
    remote_group_id: Mapped[str | None] = mapped_column(String(36))
    description: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class AmphoraRow(TimestampMixin, Base):
    __tablename__ = "amphorae"

    id: Mapped[str] = _id()
    loadbalancer_id: Mapped[str | None] = mapped_column(String(36), index=True)
    status: Mapped[str] = mapped_column(String(36), nullable=False)
    role: Mapped[str | None] = mapped_column(String(16))
    host: Mapped[str | None] = mapped_column(String(255))
    lb_network_ip: Mapped[str | None] = mapped_column(String(64))
    vrrp_ip: Mapped[str | None] = mapped_column(String(64))
    ha_ip: Mapped[str | None] = mapped_column(String(64))
    vrrp_port_id: Mapped[str | None] = mapped_column(String(36))
    ha_port_id: Mapped[str | None] = mapped_column(String(36))
    cert_expiration: Mapped[datetime | None] = mapped_column(DateTime)
    compute_id: Mapped[str | None] = mapped_column(String(64))
    vrrp_interface: Mapped[str | None] = mapped_column(String(16))
    vrrp_id: Mapped[int | None] = mapped_column(Integer)
    vrrp_priority: Mapped[int | None] = mapped_column(Integer)
    last_heartbeat_at: Mapped[float | None] = mapped_column(Float)
    # The newest heartbeat any health manager accepted from this amphora's agent: its
    # (epoch, sequence). Shared so that a captured datagram is refused by every health
    # manager and after restarts, not only by the one process that saw it first.
    heartbeat_epoch: Mapped[int | None] = mapped_column(BigInteger)
    heartbeat_sequence: Mapped[int | None] = mapped_column(BigInteger)
    failover_pending: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


def _total() -> Mapped[int]:
    return mapped_column(BigInteger, nullable=False, default=0, server_default="0")


class ListenerStatsRow(Base):
    """Counters of one listener as seen by one amphora, folded across restarts."""

    __tablename__ = "listener_stats"

    amphora_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    listener_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    loadbalancer_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    epoch: Mapped[int] = mapped_column(BigInteger, nullable=False)
    base: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False)
    last: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False)
    # What the record adds to its object's figures (``counter_totals``): written with
    # ``base`` and ``last`` by the health manager's flush, kept in step by an ORM write too.
    bytes_in: Mapped[int] = _total()
    bytes_out: Mapped[int] = _total()
    active_connections: Mapped[int] = _total()
    total_connections: Mapped[int] = _total()
    request_errors: Mapped[int] = _total()
    requests: Mapped[int] = _total()
    vip_probes: Mapped[int] = _total()
    vip_answered: Mapped[int] = _total()
    check_failures: Mapped[int] = _total()


@event.listens_for(ListenerStatsRow, "before_insert")
@event.listens_for(ListenerStatsRow, "before_update")
def _keep_totals(_mapper: Any, _conn: Any, row: ListenerStatsRow) -> None:
    # Only an ORM write passes here (tests, tools); the health manager's Core upsert
    # writes the totals itself.
    for name, value in record_totals(row.base, row.last).items():
        setattr(row, name, value)


class ConvergeJobRow(Base):
    """The durable "converge load balancer X" job: one row per load balancer.

    A write bumps ``requested_gen``; a worker claims the row (lease), converges, and on
    success sets ``done_gen`` to the generation it claimed. Changes that arrive while the
    row is queued merge into the same run; changes that arrive during a run leave
    ``requested_gen > done_gen`` so the row is claimed again.
    """

    __tablename__ = "converge_jobs"

    loadbalancer_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    requested_gen: Mapped[int] = mapped_column(Integer, nullable=False)
    done_gen: Mapped[int] = mapped_column(Integer, nullable=False)
    claimed_gen: Mapped[int] = mapped_column(Integer, nullable=False)
    rebuild: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[float | None] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    next_attempt_at: Mapped[float] = mapped_column(Float, nullable=False, index=True)
    last_error: Mapped[str | None] = mapped_column(String(2048))
    updated_at: Mapped[float] = mapped_column(Float, nullable=False)
    # The data-plane version the last successful converge sent (``ApplyResult.version``;
    # None for providers without one): the resync checks it against what the nodes report
    # instead of converging again (``lbaas.jobs.resync_check``).
    applied_version: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


def table_of(mapped: type[Base]) -> Table:
    """The Core table behind a mapped class, typed for Core statements."""
    table = mapped.__table__
    assert isinstance(table, Table)
    return table


# The key manager (lbaas/keymanager): Barbican's secrets, containers and consumers.
# Payloads are stored only sealed (``lbaas.certs.kek``): ``ciphertext`` is AES-GCM under
# the key-encryption key ``kek_id``, which lives in a file, never in this database.


class SecretRow(Base):
    __tablename__ = "km_secrets"

    id: Mapped[str] = _id()
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    creator_id: Mapped[str | None] = mapped_column(String(255))
    name: Mapped[str | None] = mapped_column(String(255))
    secret_type: Mapped[str] = mapped_column(String(16), nullable=False)
    algorithm: Mapped[str | None] = mapped_column(String(255))
    bit_length: Mapped[int | None] = mapped_column(Integer)
    mode: Mapped[str | None] = mapped_column(String(255))
    expiration: Mapped[datetime | None] = mapped_column(DateTime)
    #: None until a payload is stored (Barbican's two-step create).
    content_type: Mapped[str | None] = mapped_column(String(255))
    kek_id: Mapped[str | None] = mapped_column(String(32))
    ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class SecretContainerRow(Base):
    __tablename__ = "km_containers"

    id: Mapped[str] = _id()
    project_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)
    creator_id: Mapped[str | None] = mapped_column(String(255))
    name: Mapped[str | None] = mapped_column(String(255))
    type: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class ContainerSecretRow(Base):
    """One named secret of a container; a secret in a container cannot be deleted."""

    __tablename__ = "km_container_secrets"
    __table_args__ = (PrimaryKeyConstraint("container_id", "name"),)

    container_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("km_containers.id", ondelete="CASCADE"), nullable=False
    )
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    secret_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("km_secrets.id"), nullable=False, index=True
    )


class ContainerConsumerRow(Base):
    """A service using a container (Octavia registers its listeners here)."""

    __tablename__ = "km_container_consumers"
    __table_args__ = (PrimaryKeyConstraint("container_id", "name", "url"),)

    container_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("km_containers.id", ondelete="CASCADE"), nullable=False
    )
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    url: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class SecretConsumerRow(Base):
    """A service using a secret (key-manager microversion 1.1)."""

    __tablename__ = "km_secret_consumers"
    __table_args__ = (PrimaryKeyConstraint("secret_id", "service", "resource_type", "resource_id"),)

    secret_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("km_secrets.id", ondelete="CASCADE"), nullable=False
    )
    service: Mapped[str] = mapped_column(String(255), nullable=False)
    resource_type: Mapped[str] = mapped_column(String(255), nullable=False)
    resource_id: Mapped[str] = mapped_column(String(36), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class HostRow(Base):
    """One agent host of the fleet: where its HTTPS API is, its zone, capacity, liveness.

    Enrolment (``lbaas agent enrol``, or ``lbaas serve`` for its own agent) writes the row;
    host heartbeats keep it UP and carry its address, zone, capacity and what it runs.
    """

    __tablename__ = "hosts"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    address: Mapped[str] = mapped_column(String(255), nullable=False)
    port: Mapped[int] = mapped_column(Integer, nullable=False)
    zone: Mapped[str] = mapped_column(String(255), nullable=False)
    capacity: Mapped[int] = mapped_column(Integer, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    enrolled_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    last_heartbeat_at: Mapped[float | None] = mapped_column(Float)
    # The newest host heartbeat any health manager accepted: (epoch, sequence), shared so
    # a captured host heartbeat cannot revive a host at another health manager.
    heartbeat_epoch: Mapped[int | None] = mapped_column(BigInteger)
    heartbeat_sequence: Mapped[int | None] = mapped_column(BigInteger)
    # The amphora ids the host said it runs in its latest heartbeat.
    reported_amphorae: Mapped[list[str]] = mapped_column(JSON, nullable=False)
