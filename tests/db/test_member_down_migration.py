"""Migration 0009 gives every existing pool the member-down policy ``keep`` (what its data
plane did before the column existed), and goes back down with the pools kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from lbaas.db.engine import Database
from lbaas.db.migrate import alembic_config, upgrade_database
from tests.support.databases import PostgresDatabases

_NOW = "2026-12-07 03:00:00"


def _policies_after_upgrade(url: str) -> list[str]:
    database = Database(url)
    try:
        upgrade_database(database, "0008_secgroups")
        with database.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO load_balancers (id, project_id, admin_state_up, vip_sg_ids,"
                    " additional_vips, provider, topology, provisioning_status,"
                    " operating_status, created_at) VALUES ('lb-1', 'p', true, '[]', '[]',"
                    " 'noop', 'SINGLE', 'ACTIVE', 'ONLINE', :now)"
                ),
                {"now": _NOW},
            )
            conn.execute(
                text(
                    "INSERT INTO pools (id, loadbalancer_id, project_id, admin_state_up,"
                    " protocol, lb_algorithm, tls_enabled, provisioning_status,"
                    " operating_status, created_at) VALUES ('pool-1', 'lb-1', 'p', true,"
                    " 'TCP', 'ROUND_ROBIN', false, 'ACTIVE', 'ONLINE', :now)"
                ),
                {"now": _NOW},
            )
        upgrade_database(database)
        with database.engine.connect() as conn:
            found = list(conn.execute(text("SELECT member_down_policy FROM pools")).scalars())
        command.downgrade(alembic_config(database), "0008_secgroups")
        with database.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM pools")).scalar_one() == 1
        upgrade_database(database)  # and up again
        return found
    finally:
        database.dispose()


def test_sqlite_upgrade_keeps_every_pools_flows(tmp_path: Path) -> None:
    assert _policies_after_upgrade(f"sqlite:///{tmp_path / 'down.sqlite'}") == ["keep"]


@pytest.mark.postgres
def test_postgresql_upgrade_keeps_every_pools_flows(postgres: PostgresDatabases) -> None:
    assert _policies_after_upgrade(postgres.create("member_down")) == ["keep"]
