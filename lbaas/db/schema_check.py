"""Does the live database have every table and column the models use?

A model changed without its migration, or a process started against a database nobody
upgraded, used to fail only when a statement touched the missing column, and on SQLite
that failure (``no such column``) is an ``OperationalError``, the same class as a locked
database: clients saw "Database busy" and the load balancer stayed PENDING for ever.
This module compares the models (``tables.Base.metadata``) with what SQLAlchemy's
inspector finds, and words what is missing together with the remedy: at start-up
(``compose.open_database``) and when a statement fails that way at run time
(``error_mapping.mapped_errors``). Only what is *missing* counts: an extra column the code
does not know (a newer schema during a rolling upgrade) breaks nothing.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from lbaas.db.tables import Base


def missing_from_database(engine: Engine) -> list[str]:
    """``table`` and ``table.column`` names the models have and the database lacks."""
    inspector = inspect(engine)
    live_tables = set(inspector.get_table_names())
    known = [t for t in Base.metadata.sorted_tables if t.name in live_tables]
    live_columns = inspector.get_multi_columns(filter_names=[t.name for t in known])
    names = {table: {c["name"] for c in cols} for (_schema, table), cols in live_columns.items()}
    missing: list[str] = []
    for table in Base.metadata.sorted_tables:
        if table.name not in live_tables:
            missing.append(table.name)
            continue
        have = names.get(table.name, set())
        missing.extend(f"{table.name}.{c.name}" for c in table.columns if c.name not in have)
    return missing


#: Alembic's scripts (as ``lbaas.db.migrate`` runs them; named here, not imported, because
#: migrate needs the engine, whose error mapping needs this module).
MIGRATIONS = Path(__file__).parent / "migrations"


def _revisions(engine: Engine) -> tuple[str | None, str | None]:
    """(the database's Alembic revision, the newest revision this code ships)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    return current, ScriptDirectory(str(MIGRATIONS)).get_current_head()


def schema_mismatch(engine: Engine) -> str | None:
    """One line naming what the database lacks and what to do; None when nothing is."""
    missing = missing_from_database(engine)
    if not missing:
        return None
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    current, head = _revisions(engine)
    if current != head:
        remedy = f"the database is at revision {current or '(none)'}, this code needs {head}: "
        remedy += "run `lbaas db upgrade`"
    else:
        remedy = (
            f"the database is at the newest revision ({head}), so no migration adds it: a model "
            "changed without its migration (see docs/architecture.md), then `lbaas db upgrade`"
        )
    return f"the database lacks {shown} (table or table.column); {remedy}"


def stated_revision(conn: Connection) -> str | None:
    """The Alembic revision the database states (None: none, or no version table), read
    with one query and without loading Alembic (every process logs it at start-up)."""
    try:
        found = conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
        return next(iter(found), None)
    except SQLAlchemyError:  # a database made without Alembic (tests' create_all)
        return None
