"""Storage of networks, subnets and ports (allocated addresses)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, bindparam, select
from sqlalchemy.orm import Session

from lbaas.db.insert_absent import insert_if_absent
from lbaas.db.tables import LoadBalancerRow, NetworkRow, PortRow, SubnetRow, table_of


def get_subnet(session: Session, subnet_id: str) -> SubnetRow | None:
    return session.get(SubnetRow, subnet_id)


def get_network(session: Session, network_id: str) -> NetworkRow | None:
    return session.get(NetworkRow, network_id)


def get_port(session: Session, port_id: str) -> PortRow | None:
    return session.get(PortRow, port_id)


def port_project(session: Session, port: PortRow) -> str | None:
    """The project a port belongs to: its own (a port created through the API), else that
    of the load balancer it is the VIP of (others, such as amphorae's, have none)."""
    if port.project_id:
        return port.project_id
    if not port.device_id:
        return None
    project: str | None = session.scalar(
        select(LoadBalancerRow.project_id).where(LoadBalancerRow.id == port.device_id)
    )
    return project


def subnets_of_network(session: Session, network_id: str) -> list[SubnetRow]:
    return list(
        session.scalars(
            select(SubnetRow)
            .where(SubnetRow.network_id == network_id)
            .order_by(SubnetRow.created_at)
        )
    )


def all_subnets(session: Session) -> list[SubnetRow]:
    return list(session.scalars(select(SubnetRow).order_by(SubnetRow.created_at)))


def all_networks(session: Session) -> list[NetworkRow]:
    return list(session.scalars(select(NetworkRow).order_by(NetworkRow.created_at)))


def taken_addresses(session: Session, subnet_id: str, candidates: list[str]) -> set[str]:
    """Which of ``candidates`` already have a port on the subnet."""
    ports = table_of(PortRow).c
    rows = session.connection().execute(
        select(ports.ip_address).where(
            ports.subnet_id == subnet_id,
            ports.ip_address.in_(bindparam("candidates", expanding=True)),
        ),
        {"candidates": candidates},
    )
    return {address for (address,) in rows}


def ports_on(session: Session, subnet_id: str, address: str) -> PortRow | None:
    return session.scalars(
        select(PortRow).where(PortRow.subnet_id == subnet_id, PortRow.ip_address == address)
    ).first()


def ensure_network(
    session: Session, network_id: str, name: str, now: datetime, mtu: int | None = None
) -> None:
    """Register the network unless it exists (several processes seed at start-up at once).

    A declared ``mtu`` is set on the network even when it exists already (the operator
    changed it); None leaves what is stored.
    """
    values = {"id": network_id, "name": name, "project_id": None, "created_at": now, "mtu": mtu}
    insert_if_absent(session.connection(), NetworkRow, values)
    if mtu is not None:
        row = session.get(NetworkRow, network_id)
        if row is not None and row.mtu != mtu:
            row.mtu = mtu


def ensure_subnet(
    session: Session,
    *,
    subnet_id: str,
    network_id: str,
    cidr: str,
    ip_version: int,
    name: str,
    gateway_ip: str | None,
    now: datetime,
) -> None:
    """Register the subnet unless it exists; an existing subnet is left as it is."""
    values = {
        "id": subnet_id,
        "network_id": network_id,
        "name": name,
        "cidr": cidr,
        "ip_version": ip_version,
        "gateway_ip": gateway_ip,
        "project_id": None,
        "created_at": now,
    }
    insert_if_absent(session.connection(), SubnetRow, values)


def try_reserve_port(session: Session, port: PortRow) -> bool:
    """Insert the port unless its address was taken meanwhile (a concurrent create).

    ``INSERT … ON CONFLICT DO NOTHING`` on the unique (subnet, address) pair instead of a
    savepoint around an ORM insert: one statement, and the outcome is its row count.
    """
    values = {col.key: _value_or_default(port, col) for col in table_of(PortRow).columns}
    return insert_if_absent(session.connection(), PortRow, values)


def _value_or_default(port: PortRow, column: Column[Any]) -> Any:
    """The attribute, or the column's scalar default when it was never set (an unflushed
    row has ``None`` there, which a NOT NULL column refuses)."""
    value = getattr(port, column.key)
    if value is None and column.default is not None and column.default.is_scalar:
        return column.default.arg  # type: ignore[attr-defined]
    return value


def ports_of_device(session: Session, device_id: str) -> list[PortRow]:
    """The ports of one device (an instance), oldest first."""
    return list(
        session.scalars(
            select(PortRow).where(PortRow.device_id == device_id).order_by(PortRow.created_at)
        )
    )


def port_at(session: Session, network_id: str, address: str) -> PortRow | None:
    """The port holding ``address`` on the network (what a metadata request's source is)."""
    return session.scalars(
        select(PortRow).where(PortRow.network_id == network_id, PortRow.ip_address == address)
    ).first()


def bound_ports_at(session: Session, addresses: list[str]) -> list[PortRow]:
    """Ports bound to a host (``binding:host_id`` set) that hold one of ``addresses``."""
    if not addresses:
        return []
    query = select(PortRow).where(PortRow.ip_address.in_(addresses), PortRow.host_id != "")
    return list(session.scalars(query))


def all_ports(session: Session) -> list[PortRow]:
    return list(session.scalars(select(PortRow).order_by(PortRow.created_at)))


def delete_port(session: Session, port: PortRow) -> None:
    session.delete(port)
