"""A column missing from the database is named as such, never "Database busy".

The database is upgraded to head and then loses a column, which is what a model changed
without its migration looks like from the running code. Start-up refuses with a line
naming the table and column and the remedy; a request that touches the column is a 500
whose log line says the same (on SQLite "no such column" is an ``OperationalError``,
which used to read as a busy database: 503); the worker that cannot load a tree sets
its load balancer ERROR with that reason instead of retrying it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from lbaas.compose import open_database
from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database
from lbaas.errors import ConfigError
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.control_plane import asgi_app, make_settings, running_control_plane
from tests.support.databases import PostgresDatabases
from tests.support.waiting import wait_until


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'mismatch.sqlite'}"
    else:
        postgres: PostgresDatabases = request.getfixturevalue("postgres")
        url = postgres.create("mismatch")
    database = Database(url)
    upgrade_database(database)
    database.dispose()
    yield url


def _drop_column(url: str, table: str, column: str) -> None:
    database = Database(url)
    with database.engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
    database.dispose()


def test_start_up_names_the_missing_column(state_dir: Path, database_url: str) -> None:
    _drop_column(database_url, "listeners", "description")
    settings = make_settings(state_dir, database_url)
    with pytest.raises(ConfigError) as raised:
        open_database(settings)  # what `lbaas serve` does first (it upgrades to head)
    message = str(raised.value)
    assert "listeners.description" in message
    assert "no migration adds it" in message and "lbaas db upgrade" in message


def test_a_request_on_a_missing_column_is_a_500_naming_it(
    state_dir: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(state_dir, database_url)
    with running_control_plane(settings) as plane, TestClient(asgi_app(plane)) as client:
        api = Api(client, "p-alpha", "member")
        _drop_column(database_url, "load_balancers", "description")
        with caplog.at_level(logging.ERROR, logger="lbaas.db.error_mapping"):
            r = api.post(
                "/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
            )
        assert r.status_code == 500, r.text
        assert "busy" not in r.text
        logged = " ".join(rec.getMessage() for rec in caplog.records)
        assert "load_balancers.description" in logged and "lbaas db upgrade" in logged


def test_a_worker_that_cannot_load_the_tree_sets_error(state_dir: Path, database_url: str) -> None:
    settings = make_settings(state_dir, database_url)
    with running_control_plane(settings) as plane, TestClient(asgi_app(plane)) as client:
        api = Api(client, "p-alpha", "member")
        # Listeners are read by every converge, not written by a load balancer's create.
        _drop_column(database_url, "listeners", "description")
        r = api.post(
            "/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
        )
        assert r.status_code == 201, r.text
        lb = r.json()["loadbalancer"]

        def status() -> str:
            with plane.database.read_connection() as conn:
                row = conn.execute(
                    text("SELECT provisioning_status FROM load_balancers WHERE id = :id"),
                    {"id": lb["id"]},
                ).one()
            return str(row[0])

        wait_until(lambda: status() == "ERROR", timeout=60, what="the load balancer in ERROR")
        with plane.database.read_connection() as conn:
            reason = conn.execute(
                text("SELECT last_error FROM converge_jobs WHERE loadbalancer_id = :id"),
                {"id": lb["id"]},
            ).scalar()
        assert reason is not None and "listeners.description" in reason
