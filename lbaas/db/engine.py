"""Engines and transactions, with SQLite and PostgreSQL behaving alike.

Every write in lbaas is one short transaction (design principle 6), so this module offers
exactly two ways in: ``read()`` and ``write()``. On SQLite a write starts with
``BEGIN IMMEDIATE`` so concurrent writers queue on the database lock up front instead of
failing half-way with "database is locked" when a reader upgrades; WAL mode lets readers
go on meanwhile. Before that, writers queue on a lock of their own (``SqliteWriterLock``),
which hands over at once instead of in the busy handler's sleeps. On PostgreSQL writes
take row locks (``SELECT … FOR UPDATE``) where the code asks for them; reads there run in
autocommit (see ``Database.__init__``). A transaction that ends in ``IntegrityError``
raises ``lbaas.errors.Conflict`` from here; inserts that expect a concurrent duplicate
(seeding, a project's first quota record, VIP ports) use ``db/insert_absent.py`` instead.
Every other translation of a database error (a lost connection, a missing column) is in
``error_mapping``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from lbaas.db.connection_liveness import check_on_checkout
from lbaas.db.error_mapping import mapped_errors, note_commit
from lbaas.errors import ConfigError, ServiceUnavailable
from lbaas.private_files import create_private

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


class SqliteWriterLock:
    """One SQLite writer at a time: across threads (a re-entrant lock) and processes (flock).

    SQLite's own busy handler sleeps in coarse steps (up to 100 ms) while another
    connection writes, which turned every API write behind a converge into a long wait.
    Queued on this lock instead, the next writer is woken the moment the previous one
    commits. The kernel drops a flock when its process dies, so a crash cannot leave it
    held.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd = -1
        self._threads = threading.RLock()
        self._depth = 0

    def __enter__(self) -> None:
        self._threads.acquire()
        try:
            if self._depth == 0:
                if self._fd < 0:
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                fcntl.flock(self._fd, fcntl.LOCK_EX)  # releases the GIL while it waits
        except BaseException:
            self._threads.release()
            raise
        self._depth += 1

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self._depth -= 1
        if self._depth == 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._threads.release()

    def close(self) -> None:
        with self._threads:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _refuse_writes(session: Session, _context: Any, _instances: Any) -> None:
    """Read sessions run in autocommit on PostgreSQL, so a flush there would be final."""
    if session.new or session.deleted or any(session.is_modified(o) for o in session.dirty):
        raise RuntimeError("a read() session tried to write; use write()")


class Database:
    """A handle on one database: an engine and the two kinds of transaction."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        echo: bool = False,
        idle_before_ping: float = 10.0,
    ) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"echo": echo, "future": True}
        self._sqlite_writer: SqliteWriterLock | None = None
        if self.is_sqlite:
            path = url.split("///", 1)[-1]
            if not path or path == ":memory:":
                raise ValueError("lbaas needs a SQLite file, not an in-memory database")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            # SQLite gives its -wal and -shm files the database file's own mode.
            create_private(Path(path))
            self._sqlite_writer = SqliteWriterLock(Path(f"{path}-writer.lock"))
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            kwargs["pool_size"] = pool_size
            kwargs["max_overflow"] = pool_size
        try:
            self.engine = create_engine(url, **kwargs)
        except (ArgumentError, NoSuchModuleError) as exc:
            raise ConfigError(f"database.url {shown_url(url)} cannot be used: {exc}") from exc
        if self.is_sqlite:
            _configure_sqlite(self.engine)
        else:
            check_on_checkout(self.engine, idle_before_ping)
        # PostgreSQL runs READ COMMITTED: each statement sees its own snapshot whether or
        # not a transaction is open, so reads run in autocommit and save the BEGIN and
        # ROLLBACK round trips (about a quarter of a small list request's time on loopback).
        self._reader = (
            self.engine
            if self.is_sqlite
            else self.engine.execution_options(isolation_level="AUTOCOMMIT")
        )
        self._sessions = sessionmaker(self._reader, expire_on_commit=False)
        event.listen(self._sessions, "before_flush", _refuse_writes)
        writer = (
            self.engine.execution_options(sqlite_begin="IMMEDIATE")
            if self.is_sqlite
            else self.engine
        )
        self._writer = writer
        self._write_sessions = sessionmaker(writer, expire_on_commit=False)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading; its transaction is discarded at the end, never committed.

        Closing (rather than rolling back) keeps loaded rows readable afterwards.
        """
        session = self._sessions()
        try:
            with mapped_errors(self.engine):
                yield session
        finally:
            session.close()

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write transaction: committed if the block ends normally, else rolled back."""
        with self._one_writer(), mapped_errors(self.engine) as phase:
            session = self._write_sessions()
            try:
                yield session
                session.flush()  # the statements; a lost connection up to here is replayable
                phase.committing = True
                session.commit()
                note_commit()
            except BaseException:
                session.rollback()
                raise
            finally:
                session.close()

    @contextmanager
    def read_connection(self) -> Iterator[Connection]:
        """``read()`` for Core-only work: never committed (on PostgreSQL, no transaction)."""
        with mapped_errors(self.engine), self._reader.connect() as conn:
            yield conn

    @contextmanager
    def write_connection(self) -> Iterator[Connection]:
        """``write()`` for Core-only work: a bare connection, no ORM session to set up.

        The job queue's claims run many times per converge; the session's own bookkeeping
        was most of their cost.
        """
        with self._one_writer(), mapped_errors(self.engine) as phase:
            with self._writer.begin() as conn:
                yield conn
                phase.committing = True  # the end of this block sends COMMIT
            note_commit()

    def _one_writer(self) -> AbstractContextManager[object]:
        return self._sqlite_writer if self._sqlite_writer is not None else nullcontext()

    def ping(self) -> None:
        """A round trip to the database; raises ``ServiceUnavailable`` when there is none."""
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        except SQLAlchemyError as exc:
            raise ServiceUnavailable("Database unreachable.") from exc

    def dispose(self) -> None:
        self.engine.dispose()
        if self._sqlite_writer is not None:
            self._sqlite_writer.close()


def shown_url(url: str) -> str:
    """``url`` fit for a message: its password hidden, or nothing of it when unparseable."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(not a database URL)"
