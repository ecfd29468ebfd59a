"""The composition root's building blocks: from settings to running parts.

``lbaas.cli`` calls these to assemble a process (API, worker, or all of them in
``lbaas serve``); tests call the same functions, so what they run is what ships.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from lbaas.api.services import ApiServices
from lbaas.config import Settings
from lbaas.converge.converge import Converger
from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database
from lbaas.health.rollup import roll_up
from lbaas.jobs.runner import JobRunner
from lbaas.jobs.worker import Worker
from lbaas.network.registry import seed_subnets
from lbaas.providers.base import ProviderContext
from lbaas.providers.registry import ProviderRegistry, build_registry

LOG = logging.getLogger(__name__)


def open_database(settings: Settings, *, upgrade: bool = True) -> Database:
    """Connect; in the embedded default also create or upgrade the schema and seed subnets."""
    database = Database(settings.database_url, pool_size=settings.database.pool_size)
    if upgrade:
        upgrade_database(database)
    seed_subnets(database, settings.network)
    return database


def open_providers(settings: Settings, database: Database) -> ProviderRegistry:
    context = ProviderContext(settings=settings, database=database)
    return build_registry(settings.providers.enabled, settings.providers.default, context)


@dataclass
class ControlPlane:
    """API services and a worker sharing one database and one provider registry."""

    settings: Settings
    database: Database
    providers: ProviderRegistry
    worker: Worker
    services: ApiServices

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()
        self.providers.close()
        self.database.dispose()


def build_worker(settings: Settings, database: Database, providers: ProviderRegistry) -> Worker:
    converger = Converger(database, providers, roll_up)
    runner = JobRunner(database, converger, settings.worker)
    return Worker(database, runner, settings.worker)


def build_control_plane(settings: Settings, *, upgrade: bool = True) -> ControlPlane:
    database = open_database(settings, upgrade=upgrade)
    providers = open_providers(settings, database)
    worker = build_worker(settings, database, providers)
    services = ApiServices(settings, database, providers, notify=worker.notify)
    return ControlPlane(settings, database, providers, worker, services)
