"""Amphora records: which data-plane instance serves which load balancer, on which agent.

The amphora provider writes these through ``lbaas.providers.amphora.store``, which fences
every write by the converge job's lease; the API's amphora routes read them (an amphora
has no project of its own: Octavia's ``project_id`` filter on the amphora list means
"amphorae of load balancers owned by that project", a sub-query kept here so the API
never builds SQL itself).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from lbaas.db.tables import AmphoraRow, HostRow, LoadBalancerRow, PortRow, table_of
from lbaas.model.enums import AmphoraRole, AmphoraStatus
from lbaas.model.fleet import HostAddress

GONE = (AmphoraStatus.DELETED, AmphoraStatus.PENDING_DELETE)


def amphorae_of(session: Session, loadbalancer_id: str) -> list[AmphoraRow]:
    return list(
        session.scalars(
            select(AmphoraRow)
            .where(AmphoraRow.loadbalancer_id == loadbalancer_id, AmphoraRow.status.not_in(GONE))
            .order_by(AmphoraRow.created_at)
        )
    )


def create_amphora(
    session: Session,
    loadbalancer_id: str,
    host: str,
    vip_address: str,
    now: datetime,
    *,
    compute_id: str | None = None,
) -> AmphoraRow:
    """A PENDING_CREATE amphora; ``ha_ip``/``ha_port_id`` are the VIP's address and port,
    as Octavia records them for every topology."""
    served = session.get(LoadBalancerRow, loadbalancer_id)
    row = AmphoraRow(
        id=str(uuid.uuid4()),
        loadbalancer_id=loadbalancer_id,
        status=AmphoraStatus.PENDING_CREATE,
        role=AmphoraRole.STANDALONE,
        host=host,
        lb_network_ip=host,
        ha_ip=vip_address,
        ha_port_id=None if served is None else served.vip_port_id,
        compute_id=compute_id,
        failover_pending=False,
        created_at=now,
    )
    session.add(row)
    session.flush()
    return row


def set_status(session: Session, amphora_id: str, status: str, now: datetime) -> None:
    row = session.get(AmphoraRow, amphora_id)
    if row is None:
        return
    row.status = status
    row.updated_at = now
    if status in GONE:
        row.failover_pending = False
        for port in session.scalars(select(PortRow).where(PortRow.device_id == amphora_id)):
            session.delete(port)


def mark_serving(session: Session, amphora_id: str, now: datetime) -> None:
    row = session.get(AmphoraRow, amphora_id)
    if row is None:
        return
    if row.status == AmphoraStatus.ALLOCATED and not row.failover_pending:
        # Already serving (every converge of its load balancer comes here): no write. Its
        # ``updated_at`` is when it began to serve, where the silence of an amphora never
        # heard from counts from, and the write waited on the health managers' row locks.
        return
    row.status = AmphoraStatus.ALLOCATED
    row.failover_pending = False
    row.updated_at = now


def port_address(session: Session, amphora_id: str, subnet_id: str) -> str | None:
    port = session.scalars(
        select(PortRow).where(PortRow.device_id == amphora_id, PortRow.subnet_id == subnet_id)
    ).first()
    return None if port is None else port.ip_address


def create_pair_member(
    session: Session,
    loadbalancer_id: str,
    host: str,
    vip_address: str,
    ha_port_id: str | None,
    role: str,
    vrrp: tuple[int, int],
    now: datetime,
    *,
    compute_id: str | None = None,
) -> AmphoraRow:
    """A PENDING_CREATE amphora of an ACTIVE_STANDBY pair; ``vrrp`` is (id, priority);
    ``compute_id`` the fleet host (``host``, the agent's address, when there is no fleet)."""
    row = create_amphora(session, loadbalancer_id, host, vip_address, now)
    row.role = role
    row.compute_id = host if compute_id is None else compute_id
    row.ha_port_id = ha_port_id
    row.vrrp_id, row.vrrp_priority = vrrp
    session.flush()
    return row


def set_vrrp_port(session: Session, amphora_id: str, port_id: str, address: str) -> None:
    row = session.get(AmphoraRow, amphora_id)
    if row is not None:
        row.vrrp_port_id, row.vrrp_ip = port_id, address


def set_role(session: Session, amphora_id: str, role: str, priority: int, now: datetime) -> None:
    row = session.get(AmphoraRow, amphora_id)
    if row is not None:
        row.role, row.vrrp_priority, row.updated_at = role, priority, now


def set_vrrp_interface(session: Session, amphora_id: str, interface: str) -> None:
    row = session.get(AmphoraRow, amphora_id)
    if row is not None:
        row.vrrp_interface = interface


def last_retired_vrrp_ip(session: Session, loadbalancer_id: str, other_than: str) -> str | None:
    """The VRRP address of the load balancer's most recently retired pair member."""
    return session.scalars(
        select(AmphoraRow.vrrp_ip)
        .where(
            AmphoraRow.loadbalancer_id == loadbalancer_id,
            AmphoraRow.id != other_than,
            AmphoraRow.status.in_(GONE),
            AmphoraRow.vrrp_ip.is_not(None),
        )
        .order_by(AmphoraRow.updated_at.desc(), AmphoraRow.created_at.desc())
        .limit(1)
    ).first()


def owned_by_project(project_id: str) -> ColumnElement[bool]:
    """Condition: the amphora serves a load balancer of ``project_id``."""
    owned = select(LoadBalancerRow.id).where(LoadBalancerRow.project_id == project_id)
    return AmphoraRow.loadbalancer_id.in_(owned.scalar_subquery())


@dataclass(frozen=True)
class AmphoraFacts:
    id: str
    status: str
    host: str | None
    last_heartbeat_at: float | None
    failover_pending: bool
    agent: HostAddress | None = None
    """Its enrolled host's agent; None for an amphora of the configured agent."""


def amphora_facts(conn: Connection, loadbalancer_id: str) -> list[AmphoraFacts]:
    """The load balancer's amphorae that are not DELETED, oldest first, with where their
    enrolled host's agent answers."""
    c, h = table_of(AmphoraRow).c, table_of(HostRow).c
    rows = conn.execute(
        select(
            c.id,
            c.status,
            c.host,
            c.last_heartbeat_at,
            c.failover_pending,
            h.id,
            h.address,
            h.port,
        )
        .outerjoin(table_of(HostRow), h.id == c.compute_id)
        .where(c.loadbalancer_id == loadbalancer_id, c.status != AmphoraStatus.DELETED.value)
        .order_by(c.created_at)
    )
    return [
        AmphoraFacts(
            *row[:5], agent=None if row[5] is None else HostAddress(row[5], row[6], row[7])
        )
        for row in rows
    ]
