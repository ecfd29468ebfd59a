"""Fixtures shared by every suite: settings, databases (SQLite and PostgreSQL), processes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.databases import PostgresDatabases

POSTGRES_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresDatabases]:
    """Creates throw-away databases on this machine's PostgreSQL; drops them at the end."""
    dbs = PostgresDatabases(POSTGRES_ADMIN_URL, prefix=f"lbaas_t_{uuid.uuid4().hex[:8]}")
    try:
        yield dbs
    finally:
        dbs.drop_all()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path
