"""API suite fixtures: the real app in-process, on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database
from tests.support.api_client import Api
from tests.support.control_plane import asgi_app, make_settings, running_control_plane
from tests.support.databases import PostgresDatabases
from tests.support.served_app import served


@pytest.fixture(scope="session")
def postgres_api_url(postgres: PostgresDatabases) -> str:
    url = postgres.create("api")
    database = Database(url)
    upgrade_database(database)
    database.dispose()
    return url


def _empty_postgres(url: str) -> None:
    from sqlalchemy import text

    from lbaas.db.tables import Base

    database = Database(url)
    names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with database.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {names} CASCADE"))
    database.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, state_dir: Path) -> str:
    if request.param == "sqlite":
        return ""
    url: str = request.getfixturevalue("postgres_api_url")
    _empty_postgres(url)
    return url


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """Override in a test module to change the control plane's settings."""
    return {}


@pytest.fixture
def plane(state_dir: Path, database_url: str, settings_overrides: dict[str, Any]) -> Iterator[Any]:
    settings = make_settings(state_dir, database_url, **settings_overrides)
    with running_control_plane(settings) as running:
        yield running


@pytest.fixture
def client(plane: Any) -> Iterator[TestClient]:
    with TestClient(asgi_app(plane)) as test_client:
        yield test_client


@pytest.fixture
def api(client: TestClient) -> Api:
    """A member of project p-alpha."""
    return Api(client, "p-alpha", "member")


@pytest.fixture
def admin(client: TestClient) -> Api:
    return Api(client, "p-admin", "admin")


@pytest.fixture
def base_url(plane: Any) -> Iterator[str]:
    """The same app served over real HTTP by uvicorn (chunked bodies, concurrent clients)."""
    with served(asgi_app(plane)) as url:
        yield url
