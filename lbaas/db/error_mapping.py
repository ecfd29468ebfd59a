"""The one place database errors become lbaas errors, and what a request may replay.

Three failures looked alike before (an ``OperationalError`` and a 503 "Database busy")
and mean different things:

* the server ended the session (``pg_terminate_backend``, a restart): SQLAlchemy marks
  the error ``connection_invalidated`` and the pool has dropped the connection. That is
  ``DatabaseConnectionLost``; whether the request may simply run again is known here
  only: not if the loss came during COMMIT (the outcome is unknown) or after a
  transaction of the same request was committed (running it again would repeat that).
  ``ReplayScope`` counts a request's commits; the API's route opens one per attempt
  (``lbaas.api.routing``), as oslo.db retries a transaction that lost its connection.
* a table or column is missing (PostgreSQL's undefined_column / undefined_table,
  SQLite's "no such column"): ``SchemaMismatch``, a 500 whose log line names what is
  missing and the remedy (``schema_check``). Retrying cannot help.
* anything else operational (a lock wait that timed out): 503 "Database busy".
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from lbaas.db.schema_check import schema_mismatch
from lbaas.errors import Conflict, DatabaseConnectionLost, SchemaMismatch, ServiceUnavailable

LOG = logging.getLogger(__name__)

# PostgreSQL's SQLSTATEs for a missing column and a missing table.
_UNDEFINED = frozenset({"42703", "42P01"})
_SQLITE_MISSING = ("no such column", "no such table", "has no column named")


@dataclass
class ReplayScope:
    """The transactions one attempt of a request has committed so far."""

    committed: int = 0


_SCOPE: ContextVar[ReplayScope | None] = ContextVar("lbaas_replay_scope", default=None)


@contextmanager
def replay_scope() -> Iterator[ReplayScope]:
    """Count the commits of the code run inside (threads started from here share it)."""
    scope = ReplayScope()
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def note_commit() -> None:
    scope = _SCOPE.get()
    if scope is not None:
        scope.committed += 1


@dataclass
class TransactionPhase:
    """Set ``committing`` just before COMMIT is sent."""

    committing: bool = False


def _is_missing_schema(exc: DBAPIError) -> bool:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate in _UNDEFINED
    text = str(exc.orig)
    return isinstance(exc, OperationalError) and any(words in text for words in _SQLITE_MISSING)


def _schema_error(engine: Engine, exc: DBAPIError) -> SchemaMismatch:
    try:
        found = schema_mismatch(engine)
    except Exception as inspect_exc:  # noqa: BLE001 - the first error is the one to report
        found = f"the live schema could not be inspected ({inspect_exc})"
    reason = found or f"{exc.orig}; run `lbaas db upgrade`"
    LOG.error("database schema mismatch: %s (the statement failed with: %s)", reason, exc.orig)
    return SchemaMismatch(f"database schema mismatch: {reason}")


@contextmanager
def mapped_errors(engine: Engine) -> Iterator[TransactionPhase]:
    """Translate what the block raises (after its rollback) into lbaas errors."""
    phase = TransactionPhase()
    try:
        yield phase
    except IntegrityError as exc:
        LOG.info("integrity error: %s", exc.orig)
        raise Conflict("Already an entity with that specified id.") from exc
    except DBAPIError as exc:
        if exc.connection_invalidated:
            scope = _SCOPE.get()
            replayable = not phase.committing and (scope is None or scope.committed == 0)
            LOG.warning("database connection lost (replayable: %s): %s", replayable, exc.orig)
            raise DatabaseConnectionLost(
                "Database connection lost, please try again.", replayable=replayable
            ) from exc
        if _is_missing_schema(exc):
            raise _schema_error(engine, exc) from exc
        if not isinstance(exc, OperationalError):
            raise
        LOG.warning("database busy: %s", exc.orig)
        raise ServiceUnavailable("Database busy, please try again.") from exc
