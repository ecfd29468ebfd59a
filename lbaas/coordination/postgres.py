"""Leases in PostgreSQL, where a multi-host control plane already stands.

One table, a row per lease: its holder and when it expires, always computed by the
database as ``now() + ttl`` (each statement runs in its own transaction, so ``now()`` is
the database's clock when the statement ran), so no node's clock is ever compared with
another's. Taking or renewing is one upsert that succeeds only when the row is the
holder's own or has expired; a lease is read back with what is left of it by the same
clock. Every call has a statement timeout: an engine that does not answer in time is
``CoordinationUnavailable``, and the holder's ``LeaseKeeper`` fences on its own clock.

The connection is psycopg's (the driver lbaas already uses), not SQLAlchemy's pool: one
connection per coordinator, reopened after an error, kept outside ``lbaas/db`` because it
is coordination, not desired state.
"""

from __future__ import annotations

import re
import threading

import psycopg
from psycopg import sql

from lbaas.coordination.base import CoordinationUnavailable, LiveLease, check_lease

_TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def conninfo(url: str) -> str:
    """``postgresql+psycopg://…`` (lbaas's database URL) → what psycopg takes."""
    return re.sub(r"^postgresql\+psycopg://", "postgresql://", url)


class PostgresCoordinator:
    def __init__(self, url: str, table: str = "lbaas_lease", timeout: float = 1.0) -> None:
        if not _TABLE_NAME.match(table):
            raise ValueError(f"coordination table {table!r} is not a plain lower-case name")
        self._dsn = conninfo(url)
        self.table = table
        self._table = sql.Identifier(table)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._made = False  # the table exists (made by the first process that needs it)

    def _connection(self) -> psycopg.Connection[tuple[object, ...]]:
        if self._conn is None or self._conn.closed:
            milliseconds = max(1, int(self._timeout * 1000))
            self._conn = psycopg.connect(
                self._dsn,
                autocommit=True,
                connect_timeout=max(1, round(self._timeout)),
                options=f"-c statement_timeout={milliseconds}",
            )
            if not self._made:
                self._conn.execute(self._create_query())
                self._made = True
        return self._conn

    def _run(self, query: sql.Composed, params: tuple[object, ...]) -> list[tuple[object, ...]]:
        with self._lock:
            try:
                cursor = self._connection().execute(query, params)
                return cursor.fetchall() if cursor.description is not None else []
            except psycopg.Error as exc:
                if self._conn is not None:
                    self._conn.close()
                raise CoordinationUnavailable(f"PostgreSQL coordination: {exc}") from exc

    def create(self) -> None:
        """Make the lease table (tests; every process makes it at its first connection)."""
        self._run(self._create_query(), ())

    def _create_query(self) -> sql.Composed:
        return sql.SQL(
            "create table if not exists {} (name text primary key, holder text not null,"
            " expires timestamptz not null)"
        ).format(self._table)

    def drop(self) -> None:
        self._run(sql.SQL("drop table if exists {}").format(self._table), ())
        self._made = False

    def renew(self, name: str, holder: str, ttl: float) -> bool:
        check_lease(name, holder, ttl)
        query = sql.SQL(
            "insert into {t} as lease (name, holder, expires)"
            " values (%s, %s, now() + %s * interval '1 second')"
            " on conflict (name) do update set holder = excluded.holder,"
            " expires = excluded.expires"
            " where lease.holder = excluded.holder or lease.expires <= now()"
            " returning holder"
        ).format(t=self._table)
        return bool(self._run(query, (name, holder, ttl)))

    def release(self, name: str, holder: str) -> None:
        query = sql.SQL("delete from {} where name = %s and holder = %s").format(self._table)
        self._run(query, (name, holder))

    def live(self, prefix: str) -> list[LiveLease]:
        query = sql.SQL(
            "select name, holder, extract(epoch from expires - now())::float8 from {}"
            " where starts_with(name, %s) and expires > now() order by name"
        ).format(self._table)
        return [
            LiveLease(str(name), str(holder), float(str(left)))
            for name, holder, left in self._run(query, (prefix,))
        ]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
