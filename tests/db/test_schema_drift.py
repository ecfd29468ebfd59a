"""The Alembic migrations build exactly the schema the SQLAlchemy models describe.

A model change without a migration (or the reverse) would pass every other test, which
create the schema through the migrations and then use the models, until some column,
index or constraint turned out to be missing on a real upgrade.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from lbaas.db.engine import Database
from lbaas.db.migrate import current_revision, upgrade_database
from lbaas.db.tables import Base
from tests.support.databases import PostgresDatabases


def _differences(url: str) -> list[Any]:
    database = Database(url)
    try:
        upgrade_database(database)
        assert current_revision(database) is not None
        with database.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        database.dispose()


def test_sqlite_schema_matches_the_models(tmp_path: Path) -> None:
    assert _differences(f"sqlite:///{tmp_path / 'drift.sqlite'}") == []


@pytest.mark.postgres
def test_postgresql_schema_matches_the_models(postgres: PostgresDatabases) -> None:
    assert _differences(postgres.create("drift")) == []
