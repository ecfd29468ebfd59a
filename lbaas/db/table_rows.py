"""Reads of any table's rows by conditions the caller writes: get, find, count, child ids.

The API builds column conditions (``MemberRow.pool_id == pool.id``) but never a statement;
these functions turn such conditions into one query each, whatever the table. The id-set
helpers bind a whole list of ids as one parameter, for statements reused across pages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import String, any_, bindparam, func, literal_column, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import InstrumentedAttribute, Session

from lbaas.db.tables import Base


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


def find_rows(session: Session, table: type[Base], *conditions: Any) -> list[Any]:
    return list(session.scalars(select(table).where(*conditions)))


def count_rows(session: Session, table: type[Base], *conditions: Any) -> int:
    return int(session.scalar(select(func.count()).select_from(table).where(*conditions)) or 0)


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
