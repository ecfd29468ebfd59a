"""Schema migrations with Alembic, run programmatically (``lbaas db upgrade``)."""

from __future__ import annotations

from collections.abc import Callable

from alembic import command
from alembic.config import Config
from sqlalchemy.exc import OperationalError

from lbaas.db.engine import Database, shown_url
from lbaas.db.schema_check import MIGRATIONS
from lbaas.errors import ConfigError


def alembic_config(database: Database) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database.url.replace("%", "%%"))
    # Processes started together each migrate: on SQLite, BEGIN IMMEDIATE makes the
    # others wait for the first one's commit (on PostgreSQL an advisory lock, env.py).
    engine = database.engine
    config.attributes["engine"] = (
        engine.execution_options(sqlite_begin="IMMEDIATE") if database.is_sqlite else engine
    )
    return config


def upgrade_database(
    database: Database,
    revision: str = "head",
    on_applied: Callable[[str], None] | None = None,
) -> None:
    """Bring the schema to ``revision``; a no-op when it is already there.
    ``on_applied`` is told each migration's revision as it is applied (progress)."""
    config = alembic_config(database)
    if on_applied is not None:
        config.attributes["on_version_apply"] = on_applied
    try:
        command.upgrade(config, revision)
    except OperationalError as exc:
        raise _unreachable(database, exc) from exc


def _unreachable(database: Database, exc: OperationalError) -> ConfigError:
    """A database that cannot be reached (or refuses us), in one line without a password."""
    reason = str(exc.orig or exc).strip().splitlines()[0]
    return ConfigError(f"cannot use the database at {shown_url(database.url)}: {reason}")


def current_revision(database: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    try:
        with database.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except OperationalError as exc:
        raise _unreachable(database, exc) from exc
