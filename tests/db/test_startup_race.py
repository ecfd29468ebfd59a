"""Processes started together on a fresh database all come up: migrate and seed race-free.

``lbaas serve``, ``lbaas api``, workers and health managers each migrate (where allowed)
and seed the subnet registry at start-up; started at once on an empty database, the
losers used to die on a duplicate table or a duplicate loopback network. Each starter
here is its own process, released at the same moment.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lbaas.compose import open_database
from lbaas.db.engine import Database
from lbaas.db.migrate import current_revision, upgrade_database
from lbaas.db.network import network_repo
from lbaas.network.registry import seed_subnets
from tests.support.control_plane import make_settings
from tests.support.databases import PostgresDatabases
from tests.support.processes import lbaas_env

STARTERS = 6


def _start_together(url: str, state_dir: Path, upgrade: bool = True) -> list[str]:
    """Start STARTERS processes that open the database as every lbaas process does; the
    output of each one that failed."""
    env = lbaas_env({"state_dir": str(state_dir), "database": {"url": url}})
    gate = state_dir / "go"
    code = (
        "import os, time\n"
        "from lbaas.compose import open_database\n"
        "from lbaas.config import load_settings\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.005)\n"
        f"open_database(load_settings(), upgrade={upgrade}).dispose()\n"
    )
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for _ in range(STARTERS)
    ]
    try:
        time.sleep(1.0)  # let every interpreter reach the gate (imports done)
        gate.touch()
        outputs = [p.communicate(timeout=120)[0].decode() for p in starters]
    finally:
        for proc in starters:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [out for proc, out in zip(starters, outputs, strict=True) if proc.returncode != 0]


@pytest.mark.postgres
def test_seeding_on_a_migrated_postgres_never_fails(
    postgres: PostgresDatabases, tmp_path: Path
) -> None:
    """``lbaas api``, workers and health managers do not migrate; they only seed. Seeding
    is milliseconds, so here the seeders are threads (each its own ``Database``) released
    by one barrier, which makes them overlap far more often than processes would."""
    url = postgres.create("seed_only")
    database = Database(url)
    upgrade_database(database)
    database.dispose()
    settings = make_settings(tmp_path, url)
    for _round in range(5):
        _empty_registry(url)
        assert _seed_together(url, settings) == []
        _check_seeded(url, tmp_path)


def _seed_together(url: str, settings: Any) -> list[Exception]:
    gate = threading.Barrier(STARTERS)
    failures: list[Exception] = []

    def seed() -> None:
        seeder = Database(url)
        try:
            gate.wait()
            seed_subnets(seeder, settings.network)
        except Exception as exc:  # noqa: BLE001 - every failure is reported by the test
            failures.append(exc)
        finally:
            seeder.dispose()

    threads = [threading.Thread(target=seed) for _ in range(STARTERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def _empty_registry(url: str) -> None:
    database = Database(url)
    with database.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM subnets")
        conn.exec_driver_sql("DELETE FROM networks")
    database.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("round_", range(2))
def test_starters_on_a_fresh_postgres_all_succeed(
    postgres: PostgresDatabases, tmp_path: Path, round_: int
) -> None:
    url = postgres.create(f"startup_{round_}")
    assert _start_together(url, tmp_path) == []
    _check_seeded(url, tmp_path)


def test_starters_on_a_fresh_sqlite_all_succeed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    assert _start_together(url, tmp_path) == []
    _check_seeded(url, tmp_path)


def _check_seeded(url: str, state_dir: Path) -> None:
    settings = make_settings(state_dir, url)
    database = open_database(settings, upgrade=False)
    try:
        assert current_revision(database) is not None
        with database.read() as session:
            subnets = network_repo.all_subnets(session)
            assert [s.id for s in subnets] == [settings.network.loopback_subnet_id]
            assert len(network_repo.all_networks(session)) == 1
    finally:
        database.dispose()
