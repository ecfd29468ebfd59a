"""Fixtures shared by every suite: settings, databases (SQLite and PostgreSQL), processes."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.databases import PostgresDatabases

POSTGRES_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


#: Suites whose every test owns the host while it runs (see ``pytest_collection_modifyitems``).
_SYSTEM_SUITES = ("e2e", "bench", "jobs")
#: Tests of lbaas against real OpenStack services (Keystone, Horizon, tempest): long, but
#: on free loopback ports with the noop provider, nothing of the host's own. They run one
#: after another in a group of their own, beside the system group (see below).
_SERVICE_TESTS = (
    "e2e/keystone/",
    "e2e/horizon/",
    "bench/test_bench_smoke_tempest.py",
)
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

    The tests against real OpenStack services (``_SERVICE_TESTS``: Keystone, Horizon, the
    tempest smoke run) are the exception: they take a third of the system stream's time
    but own nothing of the host (free loopback ports, the noop provider, their own
    processes), so they form a ``services`` group of their own. ``--dist loadgroup`` hands
    the largest groups out first, one to each worker: the system group to one, the
    services group to the other, which then takes the in-process tests.
    """
    grouping = config.pluginmanager.hasplugin("xdist")  # absent with -p no:xdist
    for item in items:
        relative = item.path.relative_to(_TESTS)
        if relative.as_posix().startswith(_SERVICE_TESTS):
            if grouping:
                item.add_marker(pytest.mark.xdist_group("services"))
            continue
        if relative.parts[0] in _SYSTEM_SUITES or item.get_closest_marker("root") is not None:
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


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts (sleepers, member servers): killed and reaped after it."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            process.kill()
            process.wait()
