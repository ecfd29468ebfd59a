"""Migration 0007 carries the counters of existing ``listener_stats`` records over into
the integer columns: a database upgraded from 0006 shows the same figures as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import select, text

from lbaas.db.engine import Database
from lbaas.db.health.stats_repo import listener_counters
from lbaas.db.migrate import alembic_config, upgrade_database
from lbaas.db.tables import ListenerStatsRow, table_of
from tests.support.databases import PostgresDatabases

_RECORDS = [
    # Two amphorae of one listener, one of them past a reload (a base to carry).
    ("amp-1", "li-1", '{"bytes_in": 100, "active_connections": 9, "requests": 4}',
     '{"bytes_in": 5, "active_connections": 2, "vip_probes": 1, "vip_answered": 1}'),
    ("amp-2", "li-1", "{}", '{"bytes_out": 7, "total_connections": 3, "check_failures": 0}'),
    ("amp-1", "mem-1", '{"request_errors": 2, "check_failures": 6}', '{"request_errors": 1}'),
]  # fmt: skip


def _upgraded_from_0006(url: str) -> dict[str, dict[str, int]]:
    database = Database(url)
    try:
        upgrade_database(database, "0006_meta")
        with database.engine.begin() as conn:
            for amphora_id, object_id, base, last in _RECORDS:
                conn.execute(
                    text(
                        "INSERT INTO listener_stats (amphora_id, listener_id, loadbalancer_id,"
                        " epoch, base, last) VALUES (:a, :o, 'lb-1', 1, :b, :l)"
                    ),
                    {"a": amphora_id, "o": object_id, "b": base, "l": last},
                )
        upgrade_database(database)
        with database.engine.connect() as conn:
            counters = listener_counters(conn, listeners_only=False)
            # The folding state stays as it was: the health manager goes on from it.
            stats = table_of(ListenerStatsRow).c
            only = (stats.amphora_id == "amp-1") & (stats.listener_id == "li-1")
            base = conn.execute(select(stats.base).where(only)).scalar_one()
            assert base == {"bytes_in": 100, "active_connections": 9, "requests": 4}
        command.downgrade(alembic_config(database), "0006_meta")  # and back, data kept
        with database.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM listener_stats")).scalar_one() == 3
        return counters
    finally:
        database.dispose()


_EXPECTED = {
    "li-1": {
        "bytes_in": 105,
        "bytes_out": 7,
        "active_connections": 2,  # a gauge: the latest reports only, base not carried
        "total_connections": 3,
        "request_errors": 0,
        "requests": 4,
        "vip_probes": 1,
        "vip_answered": 1,
        "check_failures": 0,
    },
    "mem-1": {
        "bytes_in": 0,
        "bytes_out": 0,
        "active_connections": 0,
        "total_connections": 0,
        "request_errors": 3,
        "requests": 0,
        "vip_probes": 0,
        "vip_answered": 0,
        "check_failures": 6,
    },
}


def test_sqlite_upgrade_keeps_the_counters(tmp_path: Path) -> None:
    assert _upgraded_from_0006(f"sqlite:///{tmp_path / 'stats.sqlite'}") == _EXPECTED


@pytest.mark.postgres
def test_postgresql_upgrade_keeps_the_counters(postgres: PostgresDatabases) -> None:
    assert _upgraded_from_0006(postgres.create("stats_totals")) == _EXPECTED
