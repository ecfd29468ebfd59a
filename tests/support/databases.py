"""Throw-away PostgreSQL databases for tests (created and dropped through psycopg)."""

from __future__ import annotations

import psycopg


class PostgresDatabases:
    def __init__(self, admin_url: str, prefix: str) -> None:
        self._admin = admin_url.replace("postgresql+psycopg://", "postgresql://")
        self._prefix = prefix
        self._created: list[str] = []

    def create(self, suffix: str) -> str:
        """A new empty database; returns its SQLAlchemy URL."""
        name = f"{self._prefix}_{suffix}"
        with psycopg.connect(self._admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        self._created.append(name)
        base = self._admin.rsplit("/", 1)[0]
        return f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"

    def drop_all(self) -> None:
        with psycopg.connect(self._admin, autocommit=True) as conn:
            for name in self._created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._created.clear()
