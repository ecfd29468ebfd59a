"""``INSERT … ON CONFLICT DO NOTHING``: create a row unless a concurrent writer already did.

Seeding, first quota records and VIP port reservations race with other processes doing
the same. A savepoint around an ORM insert works on one database and costs a round trip
more; this is one statement on both SQLite and PostgreSQL, and the row it returns (none
when the key was taken) says who won.
Statements are built once per table and dialect (every load balancer create reserves a
port).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Insert

from lbaas.db.tables import Base, table_of

_INSERTS = {"postgresql": postgresql_insert, "sqlite": sqlite_insert}


@functools.cache
def _statement(mapped: type[Base], dialect: str) -> Insert:
    table = table_of(mapped)
    insert: Any = _INSERTS[dialect](table)
    values: dict[str, Any] = {c.key: bindparam(c.key) for c in table.columns}
    # RETURNING rather than the row count: psycopg reports -1 for this statement on
    # PostgreSQL (read as "inserted"), so a taken address was handed out twice.
    statement: Insert = (
        insert.values(values).on_conflict_do_nothing().returning(*table.primary_key.columns)
    )
    return statement


def insert_if_absent(conn: Connection, mapped: type[Base], values: Mapping[str, Any]) -> bool:
    """Insert one row of ``mapped`` (every column given); False if a unique key was taken."""
    result = conn.execute(_statement(mapped, conn.dialect.name), dict(values))
    return result.first() is not None
