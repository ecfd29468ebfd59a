"""Alembic environment: runs migrations on the engine lbaas already built."""

from __future__ import annotations

from alembic import context

from lbaas.db.tables import Base

config = context.config
engine = config.attributes.get("engine")


def run() -> None:
    if engine is None:
        raise RuntimeError("lbaas migrations run through lbaas.db.migrate, with an engine")
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run()
