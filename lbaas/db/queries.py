"""Small read and lock queries the API needs, kept here so it never writes SQL itself."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, any_, bindparam, func, literal, literal_column, select, union_all
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import InstrumentedAttribute, Session

from lbaas.db.insert_absent import insert_if_absent
from lbaas.db.tables import (
    Base,
    ListenerRow,
    LoadBalancerRow,
    PoolRow,
    QuotaRow,
    TagRow,
    table_of,
)
from lbaas.model.enums import ProvisioningStatus


def lock_loadbalancer(session: Session, loadbalancer_id: str) -> LoadBalancerRow | None:
    """The load balancer row, locked for the rest of the transaction (the 409 test-and-set)."""
    row = session.get(
        LoadBalancerRow, loadbalancer_id, with_for_update=True, populate_existing=True
    )
    if row is None or row.provisioning_status == ProvisioningStatus.DELETED:
        return None
    return row


def get_row(session: Session, table: type[Base], ident: str) -> Any:
    return session.get(table, ident)


def children_ids(
    session: Session,
    id_column: InstrumentedAttribute[Any],
    parent_column: InstrumentedAttribute[Any],
    parent_ids: Sequence[str],
    *conditions: Any,
) -> dict[str, list[str]]:
    """Ids of children grouped by parent id, in one query (for the ``[{"id"}]`` lists)."""
    out: dict[str, list[str]] = {p: [] for p in parent_ids}
    if not parent_ids:
        return out
    # An expanding bind parameter, not a list literal: SQLAlchemy coerces every element of
    # a literal list each time the statement is built, which costs more than the query.
    stmt = select(parent_column, id_column).where(
        parent_column.in_(bindparam("parent_ids", expanding=True)), *conditions
    )
    for parent, child in session.connection().execute(stmt, {"parent_ids": list(parent_ids)}):
        out[parent].append(child)
    return out


@dataclass(frozen=True)
class LoadBalancerChildren:
    """What a load balancer's view lists besides its own columns, per load balancer id."""

    listeners: dict[str, list[str]]
    pools: dict[str, list[str]]
    tags: dict[str, list[str]]


# Provisioning statuses of objects that exist for the API (everything but DELETED).
LIVE_STATUSES = tuple(s.value for s in ProvisioningStatus if s is not ProvisioningStatus.DELETED)


def in_id_set(column: Any, dialect: str) -> Any:
    """``column IN <the ids bound as "id_set">``, with one bind parameter however many.

    An expanding IN list is rendered anew for every call, element by element; for a page
    of hundreds of load balancers that cost more than the query. PostgreSQL takes an
    array, SQLite a JSON array unpacked by ``json_each``.
    """
    if dialect == "postgresql":
        return column == any_(bindparam("id_set", type_=ARRAY(String)))
    ids: Any = select(literal_column("value")).select_from(func.json_each(bindparam("id_set")))
    return column.in_(ids.scalar_subquery())


def id_set_value(dialect: str, ids: Sequence[str]) -> object:
    """The value to bind as ``id_set`` for ``in_id_set``."""
    return list(ids) if dialect == "postgresql" else json.dumps(list(ids))


@functools.cache
def _loadbalancer_children_query(dialect: str) -> Any:
    listeners, pools, tags = ListenerRow.__table__.c, PoolRow.__table__.c, TagRow.__table__.c
    return union_all(
        select(literal("l"), listeners.loadbalancer_id, listeners.id).where(
            in_id_set(listeners.loadbalancer_id, dialect),
            listeners.provisioning_status.in_(LIVE_STATUSES),
        ),
        select(literal("p"), pools.loadbalancer_id, pools.id).where(
            in_id_set(pools.loadbalancer_id, dialect), pools.provisioning_status.in_(LIVE_STATUSES)
        ),
        select(literal("t"), tags.resource_id, tags.tag).where(
            in_id_set(tags.resource_id, dialect)
        ),
    )


def loadbalancer_children(session: Session, lb_ids: Sequence[str]) -> LoadBalancerChildren:
    """Listener ids, pool ids and tags of many load balancers in one round trip."""
    out = LoadBalancerChildren(
        {i: [] for i in lb_ids}, {i: [] for i in lb_ids}, {i: [] for i in lb_ids}
    )
    if not lb_ids:
        return out
    by_kind = {"l": out.listeners, "p": out.pools, "t": out.tags}
    conn = session.connection()
    dialect = conn.dialect.name
    rows = conn.execute(
        _loadbalancer_children_query(dialect), {"id_set": id_set_value(dialect, lb_ids)}
    )
    for kind, parent, value in rows:
        by_kind[kind][parent].append(value)
    for tags in out.tags.values():
        tags.sort()
    return out


def find_rows(session: Session, table: type[Base], *conditions: Any) -> list[Any]:
    return list(session.scalars(select(table).where(*conditions)))


def count_live_loadbalancers(session: Session, **where: str) -> int:
    """How many load balancers that are not DELETED have the given column values (the
    flavor or zone that is in use cannot be deleted)."""
    conditions = [getattr(LoadBalancerRow, column) == value for column, value in where.items()]
    return count_rows(
        session,
        LoadBalancerRow,
        *conditions,
        LoadBalancerRow.provisioning_status != ProvisioningStatus.DELETED.value,
    )


def count_rows(session: Session, table: type[Base], *conditions: Any) -> int:
    return int(session.scalar(select(func.count()).select_from(table).where(*conditions)) or 0)


def lock_quota_record(session: Session, project_id: str) -> QuotaRow:
    """The project's quota record, locked for the rest of the transaction (created with all
    defaults the first time the project creates anything).

    The lock is what makes "count, compare, insert" hold under concurrency: two creates of
    one project queue here, and the second counts after the first has committed (READ
    COMMITTED gives the count a fresh snapshot). On SQLite ``BEGIN IMMEDIATE`` already
    serialises writers and ``FOR UPDATE`` is not rendered.
    """
    values = {c.key: None for c in table_of(QuotaRow).columns}
    insert_if_absent(session.connection(), QuotaRow, {**values, "project_id": project_id})
    record = session.get(QuotaRow, project_id, with_for_update=True, populate_existing=True)
    assert record is not None  # inserted above or by a committed concurrent writer
    return record
