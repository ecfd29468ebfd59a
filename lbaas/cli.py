"""The ``lbaas`` command, and the composition root: settings are read here and passed down.

lbaas serve                 everything in one process (embedded SQLite by default)
lbaas api | worker          the parts, for scale-out against PostgreSQL
lbaas health                the heartbeat receiver and stale-amphora sweeper
lbaas agent                 the per-host agent that runs HAProxy for amphorae
lbaas agent enrol HOST_ID   issue a new agent host's bundle (certificate, key, settings)
lbaas host list             the agent hosts of the fleet: zone, capacity, status, load
lbaas certs status|renew|rotate-ca   the controller-agent link's certificates and CA
lbaas db upgrade            create or migrate the schema
lbaas network create-subnet register a subnet VIPs and members can use
lbaas cleanup               stop what a stopped serve or agent left running (HAProxy)
lbaas config-reference      print the configuration reference (Markdown)
lbaas lab up|down|status    a multi-host lab of network namespaces on this machine
lbaas tier watch|status     the L4 tier's lease watcher; its nodes, leases, VIPs, sessions
lbaas kubernetes            turn Kubernetes Services into load balancers (any Octavia API)
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lbaas.api.validation import operator_policy
from lbaas.config import Settings, load_settings
from lbaas.errors import CommandRefused, ConfigError
from lbaas.fleet.keeper_command import add_parser as add_keeper_parser
from lbaas.listening import bind_agent, bind_api, bind_embedded_agent, bind_embedded_heartbeats
from lbaas.private_files import make_private_directory
from lbaas.startup_heap import freeze_startup_heap
from lbaas.state_directory import DEFAULT_TEXT as DEFAULT_STATE_DIR
from lbaas.state_directory import StateLock
from lbaas.stop_signals import StopSignals, hold_stop_signals

if TYPE_CHECKING:
    import socket

    from lbaas.after_listening import AfterListening
    from lbaas.child_worker import ChildWorker

LOG = logging.getLogger("lbaas")

STATE_DIR_HELP = (
    f"where SQLite, certificates and amphorae live (default: {DEFAULT_STATE_DIR}; "
    "or state_dir / LBAAS_STATE_DIR)"
)

# How long past ``worker.stop_timeout`` serve waits for its worker child (which by then
# frees its unfinished leases and exits) before it SIGKILLs it.
CHILD_EXIT_GRACE = 5.0


def _settings(args: argparse.Namespace, *, create: bool = True) -> Settings:
    """The settings of this command; ``create``: make the state directory (0700) if it
    is missing. A command that only reads state passes False and never makes one."""
    overrides: dict[str, Any] = {}
    if getattr(args, "state_dir", None):
        overrides["state_dir"] = args.state_dir
    if getattr(args, "port", None):
        overrides.setdefault("api", {})["port"] = args.port
    if getattr(args, "database_url", None):
        overrides.setdefault("database", {})["url"] = args.database_url
    settings = load_settings(Path(args.config) if args.config else None, overrides=overrides)
    # Before anything starts: the API would refuse it later, after the worker was started.
    operator_policy.check_defaults(settings.api)
    # What lbaas and its children (HAProxy's pid files, SQLite's journals) create is for
    # this user only, and so is the state directory, whatever mode it was made with.
    os.umask(0o077)
    if create:
        make_private_directory(settings.state_dir)
    return settings


def _existing_state(args: argparse.Namespace) -> Settings:
    """The settings of a command that reads state: refused in one line when there is none
    (instead of SQLite's "no such table" after an empty database was made)."""
    from lbaas.state_directory import require_sqlite_state

    settings = _settings(args, create=False)
    require_sqlite_state(settings.state_dir, settings.database_url)
    return settings


def _setup_logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Every agent call would otherwise be logged by the HTTP client at INFO.
    logging.getLogger("httpx").setLevel(logging.WARNING)


def _check_exposure(settings: Settings) -> None:
    """Refuse noauth beyond loopback (ConfigError: one line, exit 2), or warn when allowed."""
    from lbaas.identity.exposure import exposure_warning

    warning = exposure_warning(settings.api)
    if warning is not None:
        print(f"lbaas: {warning}", file=sys.stderr, flush=True)


def _serve_api(
    settings: Settings, app: Any, listening: socket.socket, after: AfterListening | None = None
) -> None:
    """Serve ``app`` on ``listening`` until a stop signal; ``after`` starts what the API
    does not need once it answers."""
    import uvicorn

    config = uvicorn.Config(
        app,
        host=settings.api.host,
        port=settings.api.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        # Links follow api.api_base_uri, as Octavia's do; nothing reads X-Forwarded-*.
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    freeze_startup_heap()  # before serving: full collections then skip start-up objects
    print(f"lbaas API listening on http://{settings.api.host}:{settings.api.port}", flush=True)
    if after is not None:
        after.watch(server)
    server.run(sockets=[listening])


def _bind_serve(
    settings: Settings,
) -> tuple[socket.socket, socket.socket | None, socket.socket | None, Any]:
    """What serve binds before anything starts: the API's, its agent's and its heartbeat
    sockets (a taken port is refused here), and its amphorae's access-log sockets held
    (HAProxy's log forwarders spin while nothing listens on them)."""
    from lbaas.after_listening import hold_embedded_access_logs

    listening, agent_socket = bind_api(settings), bind_embedded_agent(settings)
    heartbeat_socket = bind_embedded_heartbeats(settings)
    return listening, agent_socket, heartbeat_socket, hold_embedded_access_logs(settings)


def cmd_serve(args: argparse.Namespace) -> int:
    from lbaas import compose
    from lbaas.after_listening import AfterListening, has_agents, start_embedded_parts
    from lbaas.api.services import ApiServices
    from lbaas.metrics.serve_metrics import serve_metrics

    observed = serve_metrics(_settings(args))
    settings = observed.settings
    _check_exposure(settings)
    lock = StateLock.acquire(settings.state_dir, "lbaas serve")  # held while it runs
    listening, agent_socket, heartbeat_socket, held_logs = _bind_serve(settings)
    _setup_logging(settings)
    stopping = hold_stop_signals()
    database = compose.open_database(settings)  # the schema made or upgraded before the child
    vault = compose.open_vault(settings, database)  # a wrong key-encryption key stops here
    providers = compose.open_providers(settings, database)
    child = _serve_child(args, observed.worker_address, settings, database)
    sender = compose.wakeup_sender(settings)
    extras: list[Callable[[], None]] = []
    # One registry for the API and the embedded health manager: both show in /metrics,
    # with the worker child's converges (read from the child at each scrape).
    metrics = observed.metrics
    # The health manager and the agent start once the API answers.
    sockets = (agent_socket, heartbeat_socket)
    parts = (settings, database, sender.notify, metrics, sockets, extras, held_logs)
    after = AfterListening(functools.partial(start_embedded_parts, *parts))
    try:
        if has_agents(settings):  # before the worker: a new amphora is placed on it
            compose.enrol_local_agent(settings, database)
        child.start()  # first: its imports run on the other core meanwhile
        print(f"lbaas database: {settings.database_url}", flush=True)
        print(observed.announcement(), flush=True)
        if not stopping.is_set():
            services = ApiServices(
                settings, database, providers, sender.notify, metrics, vault=vault
            )
            _serve_api(settings, compose.http_app(services), listening, after)
    finally:
        failed = after.finish()  # the extras are all started (or failed) before any stops
        # In order: the API has stopped accepting; the worker finishes or frees its jobs
        # (it may still need the agent for them); then the health manager (before the
        # agent, whose silence it would take for a dead amphora) and the agent (HAProxy
        # keeps serving); then the shared resources.
        child.stop()
        for stop in extras:
            stop()
        sender.close()
        providers.close()
        database.dispose()
        for each in (listening, agent_socket, heartbeat_socket):
            if each is not None:
                each.close()
        LOG.info("lbaas serve stopped")
        lock.release()
    if failed is not None:
        raise failed
    return 0


def _serve_child(
    args: argparse.Namespace, metrics_address: Any, settings: Settings, database: Any
) -> ChildWorker:
    """serve's worker child; the leases of a dead one are freed at once."""
    from lbaas.child_worker import ChildWorker
    from lbaas.compose import release_dead_worker

    return ChildWorker(
        _child_worker_command(args, metrics_address),
        on_death=lambda pid: release_dead_worker(database, pid),
        stop_timeout=settings.worker.stop_timeout + CHILD_EXIT_GRACE,
    )


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def _child_worker_command(
    args: argparse.Namespace, metrics_address: tuple[str, int] | None
) -> list[str]:
    """``lbaas worker`` with serve's own options, told to exit when serve does, and where
    to serve the metrics serve's /metrics reads from it."""
    command = [sys.executable, "-m", "lbaas.cli"]
    if args.config:
        command += ["--config", args.config]
    command += ["worker", "--parent-pid", str(os.getpid())]
    if args.state_dir:
        command += ["--state-dir", args.state_dir]
    if args.database_url:
        command += ["--database-url", args.database_url]
    if metrics_address is not None:
        command += ["--metrics-address", "{}:{}".format(*metrics_address)]
    return command


def cmd_api(args: argparse.Namespace) -> int:
    from lbaas.api.services import ApiServices
    from lbaas.compose import http_app, open_database, open_providers, open_vault, wakeup_sender

    settings = _settings(args)
    _check_exposure(settings)
    listening = bind_api(settings)
    _setup_logging(settings)
    stopping = hold_stop_signals()
    database = open_database(settings, upgrade=False)
    vault = open_vault(settings, database)
    providers = open_providers(settings, database)
    sender = wakeup_sender(settings)
    try:
        if not stopping.is_set():
            app = http_app(ApiServices(settings, database, providers, sender.notify, vault=vault))
            _serve_api(settings, app, listening)
    finally:
        listening.close()
        sender.close()
        providers.close()
        database.dispose()
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    signals = StopSignals(parent_pid=args.parent_pid)  # before the imports' second or so
    from lbaas.compose import build_worker_process, open_database, open_providers

    settings = _settings(args)
    _setup_logging(settings)
    database = open_database(settings, upgrade=False)
    providers = open_providers(settings, database)
    process = build_worker_process(settings, database, providers, args.metrics_address)
    process.start()
    freeze_startup_heap()  # what start-up made lives as long as the worker: never walk it
    print(f"lbaas worker {process.worker.owner} running", flush=True)
    signals.wait()
    process.stop()
    providers.close()
    database.dispose()
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    signals = StopSignals()  # before the imports' second or so
    from lbaas.compose import open_database, wakeup_sender
    from lbaas.health.service import start_health_manager
    from lbaas.metrics.endpoint import MetricsEndpoint
    from lbaas.metrics.process import ProcessMetrics

    settings = _settings(args)
    _setup_logging(settings)
    metrics = ProcessMetrics()
    stop = start_health_manager(
        settings, open_database(settings, upgrade=False), wakeup_sender(settings).notify, metrics
    )
    stops = [stop]
    if settings.health.metrics_port:
        port = settings.health.metrics_port
        stops.append(MetricsEndpoint(metrics, settings.health.bind_host, port).stop)
    freeze_startup_heap()  # full collections then skip start-up objects (heartbeat latency)
    signals.wait()
    for each in reversed(stops):
        each()
    return 0


def cmd_agent(args: argparse.Namespace) -> int:
    from lbaas.after_listening import start_agent
    from lbaas.host.activation import inherited_socket

    # First, before anything starts a child: the service manager's socket, if it passed one.
    inherited = inherited_socket()
    settings = _settings(args)
    lock = StateLock.acquire(settings.state_dir, "lbaas agent")  # its HAProxies
    listening = inherited or bind_agent(settings)
    _setup_logging(settings)
    signals = StopSignals()
    stop = start_agent(settings, listening)
    freeze_startup_heap()
    where = "an inherited socket" if inherited else f"{settings.agent.host}:{settings.agent.port}"
    print(f"lbaas agent ({settings.agent.mode} mode) on {where}", flush=True)
    signals.wait()
    stop()
    lock.release()
    return 0


def cmd_agent_enrol(args: argparse.Namespace) -> int:
    from lbaas.compose import enrol_agent, open_database
    from lbaas.fleet.enrolment import Enrolment, parse_managers

    settings = _settings(args)
    managers = parse_managers(args.health_manager or [])
    if not managers:
        bind = settings.health.bind_host
        if bind in ("0.0.0.0", "::", ""):
            raise ConfigError("health.bind_host is a wildcard: name --health-manager HOST:PORT")
        managers = (f"{bind}:{settings.health.bind_port}",)
    enrolment = Enrolment(
        host_id=args.host_id,
        address=args.address,
        port=args.agent_port,
        zone=args.zone,
        capacity=args.capacity,
        health_managers=managers,
        mode=args.mode,
    )
    out = Path(args.out)
    enrol_agent(settings, open_database(settings), enrolment, out)
    print(f"host {args.host_id} enrolled; start it with: lbaas --config {out / 'agent.toml'} agent")
    return 0


def cmd_host_list(args: argparse.Namespace) -> int:
    from lbaas.compose import host_table, list_hosts, open_database

    print(host_table(list_hosts(open_database(_existing_state(args), upgrade=False)), args.json))
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from lbaas.db.engine import Database
    from lbaas.db.migrate import current_revision, upgrade_showing
    from lbaas.progress import Progress

    settings = _settings(args)
    database = Database(settings.database_url)
    phase = getattr(args, "phase", None)
    progress = Progress(f"db upgrade {phase or ''}".strip(), quiet=args.quiet)
    upgrade_showing(database, phase, progress.step)
    progress.finish()
    print(f"database at revision {current_revision(database)}")
    return 0


def cmd_create_subnet(args: argparse.Namespace) -> int:
    from lbaas.compose import open_database
    from lbaas.network.registry import seed_subnets
    from lbaas.network.subnet_arguments import subnet_declaration

    subnet = subnet_declaration(
        args.cidr,
        subnet_id=args.id,
        network_id=args.network_id,
        name=args.name,
        gateway=args.gateway,
        mtu=args.mtu,
    )
    settings = _settings(args)
    database = open_database(settings)
    seed_subnets(database, settings.network.model_copy(update={"subnets": (subnet,)}))
    print(f"subnet {subnet.id} ({subnet.cidr}) on network {subnet.network_id}")
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from lbaas.state_cleanup import cleanup

    return cleanup(_settings(args, create=False).state_dir)


def cmd_rotate_kek(args: argparse.Namespace) -> int:
    from lbaas.compose import open_database, open_vault

    settings = _settings(args)
    database = open_database(settings)
    try:
        vault = open_vault(settings, database)
        if vault is None:
            raise ConfigError("the key manager is disabled (keymanager.enabled)")
        count = vault.rotate()
    finally:
        database.dispose()
    print(
        f"new key-encryption key {vault.ring.primary} in {settings.kek_path}; "
        f"{count} secret(s) re-sealed, older keys removed"
    )
    return 0


def cmd_config_reference(_args: argparse.Namespace) -> int:
    from lbaas.config_reference import render_reference

    sys.stdout.write(render_reference())
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from lbaas.db.engine import Database
    from lbaas.diagnose.command import run

    settings = _existing_state(args)
    database = Database(settings.database_url)  # read only: no upgrade, no seeding
    try:
        return run(settings, database, args.loadbalancer)
    finally:
        database.dispose()


def cmd_lab(args: argparse.Namespace) -> int:
    from lbaas.lab.command import run

    settings = _settings(args)
    return run(args, settings.state_dir, settings.tier)


def cmd_tier(args: argparse.Namespace) -> int:
    from lbaas.tier.command import run

    return run(args, _settings(args, create=False))


def cmd_kubernetes(args: argparse.Namespace) -> int:
    from lbaas.integrations.kubernetes.command import run

    settings = _settings(args, create=False)  # it keeps no state: nothing to make
    _setup_logging(settings)
    return run(settings.kubernetes)


def _add_fleet_commands(sub: Any, agent: argparse.ArgumentParser) -> None:
    """``lbaas agent enrol`` and ``lbaas host list``."""
    agent_sub = agent.add_subparsers(dest="agent_command")
    enrol = agent_sub.add_parser("enrol", help="issue a new agent host's bundle and record it")
    enrol.add_argument("host_id", help="the host's id: one lower-case DNS label")
    enrol.add_argument("--address", required=True, help="address of the agent's HTTPS API")
    enrol.add_argument("--agent-port", type=int, default=9443, help="its port (9443)")
    enrol.add_argument("--zone", default="nova", help="availability zone it declares (nova)")
    enrol.add_argument("--capacity", type=int, default=100, help="most amphorae (100)")
    enrol.add_argument("--mode", choices=("loopback", "netns"), default="loopback")
    enrol.add_argument(
        "--health-manager",
        action="append",
        help="HOST:PORT of a health manager (repeat or comma-separate); "
        "default: health.bind_host:bind_port",
    )
    enrol.add_argument("--out", required=True, help="directory to write the bundle into")
    enrol.add_argument("--state-dir", help=STATE_DIR_HELP)
    enrol.add_argument("--database-url")
    enrol.set_defaults(func=cmd_agent_enrol)
    add_keeper_parser(agent_sub, functools.partial(_settings, create=False))
    host = sub.add_parser("host", help="the agent hosts of the fleet")
    host_sub = host.add_subparsers(dest="host_command", required=True)
    host_list = host_sub.add_parser("list", help="list the hosts")
    host_list.add_argument("--json", action="store_true", help="JSON instead of a table")
    host_list.add_argument("--state-dir", help=STATE_DIR_HELP)
    host_list.add_argument("--database-url")
    host_list.set_defaults(func=cmd_host_list)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lbaas", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="TOML settings file (or LBAAS_CONFIG)")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(
        name: str, func: Callable[[argparse.Namespace], int], help_text: str
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--state-dir", help=STATE_DIR_HELP)
        p.add_argument("--database-url", help="SQLAlchemy URL (default: SQLite in the state dir)")
        p.set_defaults(func=func)
        return p

    serve = add("serve", cmd_serve, "API, worker and periodic tasks (the worker in a child)")
    serve.add_argument("--port", type=int, help="API port (default 9876)")
    api = add("api", cmd_api, "the REST API only")
    api.add_argument("--port", type=int, help="API port (default 9876)")
    worker = add("worker", cmd_worker, "the converge worker only")
    # serve's child worker: exit when this process is no longer the parent.
    worker.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    # serve's child worker: serve /metrics exactly at HOST:PORT (serve reads it there).
    worker.add_argument("--metrics-address", type=_host_port, help=argparse.SUPPRESS)
    add("health", cmd_health, "the health manager only")
    _add_fleet_commands(sub, add("agent", cmd_agent, "the per-host agent"))
    diagnose = add("diagnose", cmd_diagnose, "why a load balancer is not well, hop by hop")
    diagnose.add_argument("loadbalancer", help="load balancer id or name")
    _add_maintenance_commands(sub)
    cleanup = sub.add_parser(
        "cleanup",
        help="stop the HAProxies and keepalived a stopped serve or agent left running",
    )
    cleanup.add_argument("--state-dir", help=STATE_DIR_HELP)
    cleanup.set_defaults(func=cmd_cleanup)
    ref = sub.add_parser("config-reference", help="print the configuration reference")
    ref.set_defaults(func=cmd_config_reference)
    from lbaas.lab.arguments import add_arguments as add_lab_arguments

    lab = sub.add_parser("lab", help="a multi-host lab of network namespaces on this machine")
    add_lab_arguments(lab)
    lab.set_defaults(func=cmd_lab)
    from lbaas.tier.arguments import add_arguments as add_tier_arguments

    tier = sub.add_parser("tier", help="the L4 tier: its lease watcher and its status")
    add_tier_arguments(tier)
    tier.set_defaults(func=cmd_tier)
    kube = sub.add_parser("kubernetes", help="turn Kubernetes Services into load balancers")
    kube.add_argument("--state-dir", help=argparse.SUPPRESS)
    kube.set_defaults(func=cmd_kubernetes)
    return parser


def _add_maintenance_commands(sub: Any) -> None:
    """``db upgrade``, ``network create-subnet``, ``certs`` and ``keymanager rotate-kek``."""
    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    up = db_sub.add_parser("upgrade", help="create or migrate the schema")
    up.add_argument("--state-dir", help=STATE_DIR_HELP)
    up.add_argument("--database-url")
    up.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    phase = up.add_mutually_exclusive_group()
    for name, when in (
        ("expand", "rolling upgrade, before the first new process: only migrations that add"),
        ("contract", "rolling upgrade, once no process of the previous release runs: the rest"),
    ):
        phase.add_argument(f"--{name}", dest="phase", action="store_const", const=name, help=when)
    up.set_defaults(func=cmd_db_upgrade)
    net = sub.add_parser("network", help="the subnet registry")
    net_sub = net.add_subparsers(dest="network_command", required=True)
    cs = net_sub.add_parser("create-subnet", help="register a subnet")
    cs.add_argument("cidr")
    cs.add_argument("--name", default="")
    cs.add_argument("--id")
    cs.add_argument("--network-id")
    cs.add_argument("--gateway")
    cs.add_argument("--mtu", type=int, help="the network's MTU (amphora legs take it)")
    cs.add_argument("--state-dir", help=STATE_DIR_HELP)
    cs.add_argument("--database-url")
    cs.set_defaults(func=cmd_create_subnet)
    from lbaas.certs_command import add_parser as add_certs_parser

    add_certs_parser(sub, STATE_DIR_HELP, _existing_state)
    km = sub.add_parser("keymanager", help="the key manager's key-encryption key")
    km_sub = km.add_subparsers(dest="keymanager_command", required=True)
    rot = km_sub.add_parser(
        "rotate-kek", help="a new key-encryption key; every stored secret re-sealed under it"
    )
    rot.add_argument("--state-dir", help=STATE_DIR_HELP)
    rot.add_argument("--database-url")
    rot.set_defaults(func=cmd_rotate_kek)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"lbaas: configuration error: {exc}", file=sys.stderr)
        return 2
    except CommandRefused as exc:
        print(f"lbaas: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
