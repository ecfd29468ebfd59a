"""Checking pooled PostgreSQL connections on checkout, without a round trip in steady use.

SQLAlchemy's ``pool_pre_ping`` sends ``SELECT 1`` on every checkout: one round trip per
request, about a sixth of a small list request on loopback. A connection that was handed
back moments ago and has nothing waiting on its socket is alive for all practical
purposes: when PostgreSQL ends a session (restart, ``pg_terminate_backend``, idle
timeout) it sends an error and closes the socket, which makes the socket readable. So the
ping is sent only when the socket has something to read or the connection sat idle for
longer than ``idle_before_ping``; a failed ping makes the pool open a fresh connection
and the caller never sees the dead one.
"""

from __future__ import annotations

import select
import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError

_RETURNED_AT = "lbaas_returned_at"


def check_on_checkout(engine: Engine, idle_before_ping: float) -> None:
    """Install the checkout check on ``engine``'s pool (instead of ``pool_pre_ping``)."""
    dialect = engine.dialect
    driver_error: type[Exception] = dialect.loaded_dbapi.Error

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_conn: Any, record: Any) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED_AT)
        if returned is None:
            return  # opened just now by the pool
        recent = time.monotonic() - returned < idle_before_ping
        if recent and not _has_input(dbapi_conn, driver_error):
            return
        try:
            dialect.do_ping(dbapi_conn)
        except driver_error as exc:
            # The pool discards this connection and retries with a new one.
            raise DisconnectionError(f"pooled connection is dead: {exc}") from exc


def _has_input(dbapi_conn: Any, driver_error: type[Exception]) -> bool:
    """Whether the server sent anything to an idle connection (a goodbye, or EOF)."""
    try:
        fd = dbapi_conn.fileno()
    except driver_error:
        return True  # closed or broken: let the ping decide
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)
