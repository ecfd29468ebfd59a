"""Engines and transactions, with SQLite and PostgreSQL behaving alike.

Every write in lbaas is one short transaction (design principle 6), so this module offers
exactly two ways in: ``read()`` and ``write()``. On SQLite a write starts with
``BEGIN IMMEDIATE`` so concurrent writers queue on the database lock up front instead of
failing half-way with "database is locked" when a reader upgrades; WAL mode lets readers
go on meanwhile. On PostgreSQL writes take row locks (``SELECT … FOR UPDATE``) where the
code asks for them. ``IntegrityError`` becomes ``lbaas.errors.Conflict`` here, the one
place that sees it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from lbaas.errors import Conflict, ServiceUnavailable

LOG = logging.getLogger(__name__)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


class Database:
    """A handle on one database: an engine and the two kinds of transaction."""

    def __init__(self, url: str, *, pool_size: int = 10, echo: bool = False) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"echo": echo, "future": True}
        if self.is_sqlite:
            path = url.split("///", 1)[-1]
            if not path or path == ":memory:":
                raise ValueError("lbaas needs a SQLite file, not an in-memory database")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            kwargs["pool_size"] = pool_size
            kwargs["max_overflow"] = pool_size
            kwargs["pool_pre_ping"] = True
        self.engine = create_engine(url, **kwargs)
        if self.is_sqlite:
            _configure_sqlite(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        writer = (
            self.engine.execution_options(sqlite_begin="IMMEDIATE")
            if self.is_sqlite
            else self.engine
        )
        self._writer = writer
        self._write_sessions = sessionmaker(writer, expire_on_commit=False)
        self._sqlite_writer = threading.RLock()

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading; its transaction is discarded at the end, never committed.

        Closing (rather than rolling back) keeps loaded rows readable afterwards.
        """
        session = self._sessions()
        try:
            yield session
        finally:
            session.close()

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write transaction: committed if the block ends normally, else rolled back."""
        with self._one_writer(), _mapped_errors():
            session = self._write_sessions()
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise
            finally:
                session.close()

    @contextmanager
    def read_connection(self) -> Iterator[Connection]:
        """``read()`` for Core-only work; the transaction is rolled back at the end."""
        with self.engine.connect() as conn:
            yield conn

    @contextmanager
    def write_connection(self) -> Iterator[Connection]:
        """``write()`` for Core-only work: a bare connection, no ORM session to set up.

        The job queue's claims run many times per converge; the session's own bookkeeping
        was most of their cost.
        """
        with self._one_writer(), _mapped_errors(), self._writer.begin() as conn:
            yield conn

    def _one_writer(self) -> AbstractContextManager[object]:
        # SQLite has one writer at a time; queue this process's writers on a mutex
        # rather than on SQLite's busy handler, which sleeps in coarse steps (up to
        # 100 ms) and turned every API write behind a converge into a long wait.
        return self._sqlite_writer if self.is_sqlite else nullcontext()

    def dispose(self) -> None:
        self.engine.dispose()


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """The one place database errors become API errors (after the rollback)."""
    try:
        yield
    except IntegrityError as exc:
        LOG.info("integrity error: %s", exc.orig)
        raise Conflict("Already an entity with that specified id.") from exc
    except OperationalError as exc:
        LOG.warning("database busy: %s", exc.orig)
        raise ServiceUnavailable("Database busy, please try again.") from exc
