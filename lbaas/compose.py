"""The composition root's building blocks: from settings to running parts.

``lbaas.cli`` calls these to assemble a process (API, worker, or all of them in
``lbaas serve``); tests call the same functions, so what they run is what ships.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lbaas.certs.authority import CertificateAuthority
from lbaas.certs.kek import KeyRing, create_key_ring, load_key_ring
from lbaas.config import Settings
from lbaas.converge.converge import Converger
from lbaas.coordination.engines import open_leadership
from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.db.jobs import job_queue
from lbaas.db.jobs.job_notify import PostgresJobListener
from lbaas.db.schema_check import schema_mismatch, stated_revision
from lbaas.db.secrets.secret_vault import SecretVault, count_sealed
from lbaas.errors import ConfigError
from lbaas.fleet.enrolment import Enrolment, write_bundle
from lbaas.health.rollup import roll_up
from lbaas.jobs.agent_return import AgentReturnWatch
from lbaas.jobs.base import WakeupSource
from lbaas.jobs.runner import JobRunner
from lbaas.jobs.siblings import DeadSiblingWatch
from lbaas.jobs.slot import WorkerSlot
from lbaas.jobs.wakeup import WakeupListener, WakeupSender, wakeup_directory
from lbaas.jobs.worker import Worker, owner_prefix
from lbaas.metrics.endpoint import MetricsEndpoint
from lbaas.metrics.process import ProcessMetrics
from lbaas.model.fleet import HostAddress, HostView
from lbaas.network.registry import seed_subnets
from lbaas.providers.base import ProviderContext
from lbaas.providers.registry import ProviderRegistry, build_registry
from lbaas.wire.heartbeat.key import heartbeat_key

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from lbaas.api.services import ApiServices

LOG = logging.getLogger(__name__)


def open_database(settings: Settings, *, upgrade: bool = True) -> Database:
    """Connect; in the embedded default also create or upgrade the schema and seed subnets.

    Stops (``ConfigError``) when the database lacks a table or column the code uses,
    naming it and the remedy, rather than failing on the first request that touches it.
    """
    database = Database(settings.database_url, pool_size=settings.database.pool_size)
    if upgrade:
        from lbaas.db.migrate import upgrade_on_start  # alembic: not for every process

        upgrade_on_start(database)  # expand only: an older process may share the database
    mismatch = schema_mismatch(database.engine)
    if mismatch is not None:
        database.dispose()
        raise ConfigError(mismatch)
    with database.engine.connect() as conn:
        LOG.info("database schema at revision %s", stated_revision(conn) or "(none)")
    seed_subnets(database, settings.network)
    return database


def open_vault(settings: Settings, database: Database) -> SecretVault | None:
    """The key manager's vault with its key ring, checked against what is stored.

    A missing key file is created only while no sealed secret exists; otherwise (and when
    the file holds the wrong keys) start-up stops with an error naming the file, and
    nothing is changed.
    """
    if not settings.keymanager.enabled:
        return None
    path = settings.kek_path
    ring = load_key_ring(path)
    if ring is None:
        stored = count_sealed(database)
        if stored:
            raise ConfigError(
                f"the key-encryption key file {path} is missing but {stored} sealed secret(s) "
                "are stored; restore the file (nothing was changed)"
            )
        fresh = KeyRing.generate()
        ring = create_key_ring(path, fresh)
        if ring is fresh:
            LOG.info("created key-encryption key file %s", path)
    vault = SecretVault(database, ring, path)
    vault.verify()
    return vault


def http_app(services: ApiServices) -> ASGIApp:
    """What the API port serves: the Octavia API, and the key manager under /key-manager,
    behind Keystone token validation when ``api.auth_strategy = "keystone"``."""
    # Imported here: a worker never serves HTTP, and a restarted one must not spend
    # seconds importing the API before it converges again (issue 10).
    from lbaas.api.app import create_asgi_app
    from lbaas.keymanager.app import with_key_manager

    served = with_key_manager(services, create_asgi_app(services))
    if services.settings.api.auth_strategy != "keystone":
        return served
    from lbaas.identity.keystone_tokens import KeystoneTokens
    from lbaas.identity.token_middleware import KeystoneTokenMiddleware

    keystone = services.settings.keystone_authtoken
    return KeystoneTokenMiddleware(served, KeystoneTokens(keystone).validate, keystone)


def open_providers(settings: Settings, database: Database) -> ProviderRegistry:
    context = ProviderContext(settings=settings, database=database)
    return build_registry(settings.providers.enabled, settings.providers.default, context)


def wakeup_sender(settings: Settings) -> WakeupSender:
    """What a process that commits jobs calls to wake the workers on its host."""
    return WakeupSender(wakeup_directory(settings.state_dir))


@dataclass
class WorkerProcess:
    """A worker and what wakes it from other processes: the host's wakeup socket and,
    on PostgreSQL, the job queue's notifications from any host."""

    worker: Worker
    listeners: list[WakeupSource]
    slot: WorkerSlot
    database: Database
    metrics: ProcessMetrics
    metrics_address: tuple[str, int] | None = None
    """Where this process's own /metrics is served (``worker.metrics_port``), if at all."""
    _endpoint: MetricsEndpoint | None = None

    def start(self) -> None:
        if self.metrics_address is not None:
            self._endpoint = MetricsEndpoint(self.metrics, *self.metrics_address)
        released = self.slot.release_earlier_claims(self.database)
        if released:
            LOG.warning(
                "released %d converge job(s) held by this worker slot's dead predecessor",
                released,
            )
        self.worker.start()
        for listener in self.listeners:
            listener.start()

    def stop(self) -> None:
        for listener in self.listeners:
            listener.stop()
        self.worker.stop()
        self.slot.close()
        if self._endpoint is not None:
            self._endpoint.stop()


def release_dead_worker(database: Database, pid: int) -> None:
    """The jobs a worker process on this host held when it died can run again at once."""
    released = job_queue.release_leases_of(database, owner_prefix(pid))
    if released:
        LOG.warning("released %d converge job(s) held by dead worker process %d", released, pid)


def build_worker(
    settings: Settings,
    database: Database,
    providers: ProviderRegistry,
    slot_tag: str = "",
    metrics: ProcessMetrics | None = None,
) -> Worker:
    converger = Converger(database, providers, roll_up)
    woken: list[Worker] = []

    def expedite(jobs: list[tuple[str, int]]) -> None:
        if job_queue.expedite(database, jobs, time.time()) and woken:
            woken[0].notify()

    watch = AgentReturnWatch(expedite)
    runner = JobRunner(database, converger, settings.worker, metrics=metrics, agent_watch=watch)
    # Several workers: one purges (leader election on [coordination]; None: this one).
    housekeeping = open_leadership(settings, "housekeeping")
    worker = Worker(
        database,
        runner,
        settings.worker,
        slot_tag=slot_tag,
        housekeeping=housekeeping,
        version_check=lambda name, wanted: providers.get(name).applied_versions(wanted),
    )
    woken.append(worker)
    return worker


def build_worker_process(
    settings: Settings,
    database: Database,
    providers: ProviderRegistry,
    metrics_address: tuple[str, int] | None = None,
) -> WorkerProcess:
    """``metrics_address``: serve /metrics exactly there (``lbaas serve``'s child, whose
    parent reads it), instead of ``worker.metrics_port`` plus the slot number."""
    slot = WorkerSlot(settings.state_dir)
    metrics = ProcessMetrics()
    worker = build_worker(settings, database, providers, slot.tag, metrics)
    address = metrics_address
    if address is None and settings.worker.metrics_port:
        # One port per worker slot, so workers sharing a host never compete for one.
        address = (settings.worker.metrics_host, settings.worker.metrics_port + (slot.number or 0))
    listeners: list[WakeupSource] = [
        WakeupListener(wakeup_directory(settings.state_dir), worker.notify),
        # A sixth of the lease: a dead sibling's jobs wait about a second, not the lease.
        DeadSiblingWatch(slot, database, worker.notify, settings.worker.lease_seconds / 6),
    ]
    if not database.is_sqlite:
        listeners.append(PostgresJobListener(database.url, worker.notify))
    return WorkerProcess(worker, listeners, slot, database, metrics, address)


@dataclass
class ControlPlane:
    """API services and a worker in one process, sharing a database and providers.

    Tests run this; ``lbaas serve`` runs the same parts with the worker in a child
    process (``lbaas.child_worker``).
    """

    settings: Settings
    database: Database
    providers: ProviderRegistry
    worker: Worker
    services: ApiServices
    sender: WakeupSender

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()
        self.sender.close()
        self.providers.close()
        self.database.dispose()


def build_control_plane(settings: Settings, *, upgrade: bool = True) -> ControlPlane:
    database = open_database(settings, upgrade=upgrade)
    providers = open_providers(settings, database)
    metrics = ProcessMetrics()
    worker = build_worker(settings, database, providers, metrics=metrics)
    sender = wakeup_sender(settings)

    def notify() -> None:
        worker.notify()  # this process's worker at once, without a socket
        sender.notify()  # and any other worker process sharing the state directory

    from lbaas.api.services import ApiServices

    services = ApiServices(settings, database, providers, notify=notify, metrics=metrics)
    services.vault = open_vault(settings, database)
    return ControlPlane(settings, database, providers, worker, services, sender)


def _agent_address(settings: Settings) -> str:
    host = settings.agent.host
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    return "::1" if host == "::" else host


def enrol_local_agent(settings: Settings, database: Database) -> None:
    """``lbaas serve``'s own agent joins the fleet as host ``agent.host_id``, UP now."""
    agent = settings.agent
    where = HostAddress(agent.host_id, _agent_address(settings), agent.port)
    with database.write() as session:
        host_repo.enrol(
            session,
            where,
            zone=agent.zone,
            capacity=agent.capacity,
            now=datetime.now(UTC).replace(tzinfo=None),
            up_at=time.time(),
        )


def enrol_agent(settings: Settings, database: Database, enrolment: Enrolment, out: Path) -> Path:
    """Issue a host's bundle from the CA and record the host (DOWN until it heartbeats)."""
    state_dir = settings.state_dir.absolute()
    ca = CertificateAuthority.load_or_create(state_dir / "pki")
    key = heartbeat_key(settings.health.heartbeat_key, state_dir)
    written = write_bundle(ca, enrolment, key, out)
    where = HostAddress(enrolment.host_id, enrolment.address, enrolment.port)
    with database.write() as session:
        host_repo.enrol(
            session,
            where,
            zone=enrolment.zone,
            capacity=enrolment.capacity,
            now=datetime.now(UTC).replace(tzinfo=None),
        )
    return written


def list_hosts(database: Database) -> list[HostView]:
    with database.read() as session:
        return host_repo.list_hosts(session)


def host_table(hosts: list[HostView], as_json: bool) -> str:
    """``lbaas host list``'s answer: a table for people, or JSON for scripts."""
    if as_json:
        return json.dumps([asdict(h) for h in hosts], indent=2)
    lines = [f"{'host':20} {'address':24} {'zone':12} {'status':6} amphorae/capacity  heard"]
    for h in hosts:
        heard = (
            "never"
            if h.last_heartbeat_at is None
            else f"{time.time() - h.last_heartbeat_at:.1f}s ago"
        )
        where = f"{h.address}:{h.port}"
        lines.append(
            f"{h.host_id:20} {where:24} {h.zone:12} {h.status:6} {h.amphorae:>8}/{h.capacity:<8}  {heard}"
        )
    return "\n".join(lines)
