"""An in-process control plane (API + worker + noop provider) on a given database."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

from lbaas.compose import ControlPlane, build_control_plane, http_app
from lbaas.config import load_settings
from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database
from lbaas.db.tables import Base
from lbaas.providers.noop import NoopProvider


def make_settings(state_dir: Path, database_url: str = "", **overrides: Any) -> Any:
    base: dict[str, Any] = {
        "state_dir": str(state_dir),
        "database": {"url": database_url},
        "worker": {"poll_interval": 0.05, "threads": 4, "backoff_base": 0.05, "lease_seconds": 5},
        "api": {"auth_strategy": "keystone_headers"},
        "providers": {"enabled": ["noop"], "default": "noop"},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return load_settings(environ={}, overrides=base)


def truncate_all(plane: ControlPlane) -> None:
    """Empty every table (PostgreSQL databases are reused across tests)."""
    names = ", ".join(f'"{t.name}"' for t in reversed(Base.metadata.sorted_tables))
    with plane.database.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {names} CASCADE"))


@functools.cache
def _migrated_sqlite() -> Path:
    """An empty SQLite database at the migrations' head, made once per test process.

    Migrating a new file costs ~0.2 s and hundreds of tests build a control plane on a new
    file; they get a copy of this one, and the plane's own upgrade finds nothing to do.
    The migrations themselves are tested in ``tests/db``.
    """
    directory = Path(tempfile.mkdtemp(prefix="lbaas-schema-"))
    atexit.register(shutil.rmtree, directory, True)
    database = Database(f"sqlite:///{directory / 'lbaas.sqlite'}")
    upgrade_database(database)
    database.dispose()  # the last connection closed: the WAL is folded into the file
    return directory / "lbaas.sqlite"


def build_plane(settings: Any) -> ControlPlane:
    """``build_control_plane``, an embedded SQLite database starting from the migrated copy."""
    target = Path(make_url(settings.database_url).database or "")  # the embedded file
    if not settings.database.url and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_migrated_sqlite(), target)
    return build_control_plane(settings)


@contextmanager
def running_control_plane(settings: Any) -> Iterator[ControlPlane]:
    plane = build_plane(settings)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


def noop_of(plane: ControlPlane) -> NoopProvider:
    provider = plane.providers.get("noop")
    assert isinstance(provider, NoopProvider)
    return provider


def asgi_app(plane: ControlPlane) -> Any:
    return http_app(plane.services)  # the Octavia API and the key manager, as served
