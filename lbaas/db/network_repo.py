"""Storage of networks, subnets and ports (allocated addresses)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from lbaas.db.tables import NetworkRow, PortRow, SubnetRow, table_of


def get_subnet(session: Session, subnet_id: str) -> SubnetRow | None:
    return session.get(SubnetRow, subnet_id)


def get_network(session: Session, network_id: str) -> NetworkRow | None:
    return session.get(NetworkRow, network_id)


def get_port(session: Session, port_id: str) -> PortRow | None:
    return session.get(PortRow, port_id)


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


def ensure_network(session: Session, network_id: str, name: str, now: datetime) -> NetworkRow:
    row = session.get(NetworkRow, network_id)
    if row is None:
        row = NetworkRow(id=network_id, name=name, created_at=now)
        session.add(row)
        session.flush()
    return row


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
) -> SubnetRow:
    row = session.get(SubnetRow, subnet_id)
    if row is None:
        row = SubnetRow(
            id=subnet_id,
            network_id=network_id,
            cidr=cidr,
            ip_version=ip_version,
            name=name,
            gateway_ip=gateway_ip,
            created_at=now,
        )
        session.add(row)
        session.flush()
    return row


def _reserve_statement(insert: Any) -> Any:
    table = table_of(PortRow)
    return (
        insert(table)
        .values({c.key: bindparam(c.key) for c in table.columns})
        .on_conflict_do_nothing()
    )


# Built once per dialect: every load balancer create reserves a VIP port.
_RESERVE = {
    "postgresql": _reserve_statement(postgresql_insert),
    "sqlite": _reserve_statement(sqlite_insert),
}


def try_reserve_port(session: Session, port: PortRow) -> bool:
    """Insert the port unless its address was taken meanwhile (a concurrent create).

    ``INSERT … ON CONFLICT DO NOTHING`` on the unique (subnet, address) pair instead of a
    savepoint around an ORM insert: one statement, and the outcome is its row count.
    """
    values = {col.key: getattr(port, col.key) for col in table_of(PortRow).columns}
    conn = session.connection()
    result = conn.execute(_RESERVE[conn.dialect.name], values)
    return bool(result.rowcount)
