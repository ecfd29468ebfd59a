"""A migrated database of each kind for the statement-level tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database
from tests.support.databases import PostgresDatabases


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    else:
        postgres: PostgresDatabases = request.getfixturevalue("postgres")
        url = postgres.create(f"db_{tmp_path.name[-12:].lower()}")
    db = Database(url)
    upgrade_database(db)
    yield db
    db.dispose()
