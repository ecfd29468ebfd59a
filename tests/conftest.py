"""Fixtures shared by every suite: settings, databases (SQLite and PostgreSQL), processes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.databases import PostgresDatabases

POSTGRES_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


#: Suites whose every test owns the host while it runs (see ``pytest_collection_modifyitems``).
_SYSTEM_SUITES = ("e2e", "bench", "jobs")
_TESTS = Path(__file__).parent


# First: xdist's own hook turns the group marker into the ``@system`` suffix it schedules by.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the tests that own the host into one xdist group, so they run one after another.

    ``tools/check.py`` runs two pytest-xdist workers with ``--dist loadgroup``: one takes
    this group, the other the in-process tests (the API on SQLite and PostgreSQL, the
    renderer, the engines, schemathesis) meanwhile, and then helps with what is left. A
    system test shares what no fixture makes private: network namespaces and links named
    by the lab, loopback addresses and ports, ``/run/lbaas``, nftables tables, or timings
    (leases, failovers, floods) that a second busy test would skew, so they run one at a
    time.
    """
    grouping = config.pluginmanager.hasplugin("xdist")  # absent with -p no:xdist
    for item in items:
        suite = item.path.relative_to(_TESTS).parts[0]
        if suite in _SYSTEM_SUITES or item.get_closest_marker("root") is not None:
            item.add_marker(pytest.mark.system)
        if grouping and item.get_closest_marker("system") is not None:
            item.add_marker(pytest.mark.xdist_group("system"))


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
