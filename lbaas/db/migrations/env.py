"""Alembic environment: runs migrations on the engine lbaas already built."""

from __future__ import annotations

from typing import Any

from alembic import context

from lbaas.db.tables import Base

config = context.config
engine = config.attributes.get("engine")
# ``lbaas db upgrade`` shows each migration as it is applied (``migrate.upgrade_database``).
on_applied = config.attributes.get("on_version_apply")


def _applied(*, step: Any, **_: Any) -> None:
    if on_applied is not None:
        on_applied(f"{step.up_revision_id}")


# Processes started together on a fresh PostgreSQL database each run the migrations; the
# first to take this transaction-scoped lock migrates, the others then find the schema
# current (on SQLite, ``migrate.py`` begins with BEGIN IMMEDIATE instead). Any constant
# works: it only has to be the same in every lbaas process.
MIGRATION_LOCK_KEY = 0x1BAA5_0001


def run() -> None:
    if engine is None:
        raise RuntimeError("lbaas migrations run through lbaas.db.migrate, with an engine")
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            # Alembic treats SQLite DDL as non-transactional and commits after every
            # migration, which lets a second starter read a half-way revision between two
            # of them. lbaas drives SQLite's BEGIN itself (engine.py), so DDL is
            # transactional there too: the whole upgrade is one transaction everywhere.
            transactional_ddl=True,
            on_version_apply=_applied,
        )
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
            context.run_migrations()
        connection.commit()


run()
