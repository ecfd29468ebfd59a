"""The engine the settings name (``[coordination]``), opened for one process.

``lbaas serve`` keeps the embedded engine: it is one process. A control plane on several
hosts points every process at the same PostgreSQL (its database already, by default) or
etcd; a tier node's agent at the one its control plane uses.
"""

from __future__ import annotations

from lbaas.config import CoordinationSettings, Settings
from lbaas.coordination.base import Coordinator
from lbaas.coordination.embedded import EmbeddedCoordinator
from lbaas.coordination.leader import Leadership


def open_coordinator(settings: CoordinationSettings, database_url: str = "") -> Coordinator:
    """The configured engine; ValueError for settings that name none usable."""
    if settings.engine == "embedded":
        return EmbeddedCoordinator()
    if settings.engine == "postgresql":
        from lbaas.coordination.postgres import PostgresCoordinator

        url = settings.url or database_url
        if not url.startswith(("postgresql://", "postgresql+psycopg://")):
            raise ValueError("coordination.engine = postgresql needs a PostgreSQL URL")
        return PostgresCoordinator(url, settings.table, settings.timeout)
    from lbaas.coordination.etcd import EtcdCoordinator

    return EtcdCoordinator(settings.url, settings.timeout)


def open_leadership(settings: Settings, loop: str) -> Leadership | None:
    """The election for singleton ``loop`` on the configured engine, not yet started;
    None with the embedded engine, where this process leads its own loops."""
    if settings.coordination.engine == "embedded":
        return None
    coordinator = open_coordinator(settings.coordination, settings.database_url)
    ttl = settings.coordination.leader_ttl
    return Leadership(coordinator, loop, ttl, owns_engine=True)
