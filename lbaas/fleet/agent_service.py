"""The agent put together: certificates, host operations, HTTPS API, supervisor, heartbeats.

This is the agent's composition root; ``lbaas agent`` calls ``run_agent(settings)``. The CA
lives under ``<state_dir>/pki`` (created on first start, shared with the controller in the
embedded mode) and the agent's own server certificate under ``pki/agent``; amphorae live
under ``<state_dir>/amphorae``. ``settings.agent.mode`` picks the host operations: loopback
(no root) or netns (``RealHostOps``). Amphorae an earlier agent left behind are adopted:
their HAProxy keeps running through an agent restart and is restarted if it died.

Heartbeats go every ``heartbeat_interval`` seconds to each of ``settings.agent.
health_managers``, or to ``settings.health.bind_host:bind_port`` (a wildcard bind address
means this host) when that list is empty; each round also carries one host heartbeat
announcing this host (``agent.host_id``, address, zone, capacity, amphorae).

Identity: an agent started with an enrolment bundle (``agent.bundle``, written by ``lbaas
agent enrol``) presents the certificate in it and signs heartbeats with its key; without
one (``lbaas serve``), the certificate is issued from the CA under ``<state_dir>/pki``.
Either way it names ``<host_id>.agents.lbaas``, which the controller checks. An enrolled
agent does not restart an adopted amphora whose HAProxy is dead: while it was away the
controller may have moved that VIP to another host, and the same VIP must never be served
twice; the controller either sends the amphora again (it is still placed here) or has
the host's stale amphorae removed when it hears the host again.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lbaas.amphora.access_log import AccessLogs
from lbaas.amphora.haproxy_process import max_connections_for
from lbaas.amphora.held_log_sockets import HeldLogSockets
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.amphora.spare_slot import SpareSlots
from lbaas.amphora.spares import SparePool
from lbaas.amphora.udp_health import namespace_checker
from lbaas.amphora.vip_probe import VipProber, with_probes
from lbaas.background import BackgroundLoop
from lbaas.certs.authority import CertificateAuthority, TlsFiles, certificate_expiry
from lbaas.certs.renewal import RenewalLoop
from lbaas.config import AgentSettings, Settings
from lbaas.errors import ConfigError
from lbaas.fleet.agent_app import create_agent_app
from lbaas.fleet.agent_certs import AgentCertificates
from lbaas.fleet.agent_paths import access_log_sockets, amphora_root_of
from lbaas.fleet.enrolment import HEARTBEAT_KEY_FILE, bundle_tls
from lbaas.fleet.heartbeat_sender import HeartbeatSender
from lbaas.fleet.log_keeper import attach_keeper
from lbaas.fleet.server import AgentHttpsServer
from lbaas.host.base import HostOps
from lbaas.host.daemons import become_subreaper
from lbaas.host.haproxy_exec import HaproxyLauncher
from lbaas.host.keepalived_exec import KeepalivedLauncher
from lbaas.host.loopback import LoopbackHostOps
from lbaas.host.real import RealHostOps
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.probes import NetworkProber
from lbaas.l4.host.lib_ops import node_nft_ops
from lbaas.l4.host.real import RealVipHolder
from lbaas.l4.host.vip_announce import AnnouncingVipHolder, LinkAnnouncer
from lbaas.l4node.manager import L4NodeManager
from lbaas.model.fleet import HostAnnouncement, agent_server_name
from lbaas.model.health import HealthReport
from lbaas.tier.host.bird import BirdControl
from lbaas.tier.host.bird_announcer import BirdVipAnnouncer
from lbaas.tier.host.real_dsr import RealDsrRouter
from lbaas.wire.amphora import AgentInfo
from lbaas.wire.heartbeat.host_codec import host_sender, to_host_payload
from lbaas.wire.heartbeat.key import heartbeat_key, load_or_create_key
from lbaas.wire.versions import WIRE_VERSION

if TYPE_CHECKING:
    from fastapi import FastAPI

    from lbaas.metadata.agent import MetadataProxies

log = logging.getLogger(__name__)

SUPERVISE_INTERVAL = 1.0
SELF_RENEWAL_INTERVAL = 10.0
"""Seconds between an agent's checks of its own certificate when it holds the CA."""
#: Seconds a node's listing of its flow counters answers single load balancers' reads.
NODE_FLOWS_MAX_AGE = 1.0


def host_ops_for(agent: AgentSettings) -> HostOps:
    """The host operations of the configured mode."""
    launcher = HaproxyLauncher(agent.haproxy_binary)
    return RealHostOps(launcher) if agent.mode == "netns" else LoopbackHostOps(launcher)


def spare_pool_of(agent: AgentSettings, host: HostOps, amphora_root: Path) -> SparePool | None:
    """The spare amphora slots of ``agent.spare_amphorae`` (netns mode only), or None."""
    if agent.spare_amphorae == 0:
        return None
    if agent.mode != "netns":
        raise ConfigError(
            "agent.spare_amphorae needs agent.mode = netns: a loopback amphora has no "
            "namespace to prepare, and its HAProxy start is all there is to save"
        )
    slots = SpareSlots(amphora_root.absolute(), host, agent.namespace_prefix)
    return SparePool(slots, agent.spare_amphorae)


def agent_identity(
    ca: CertificateAuthority, pki: Path, host: str, host_id: str | None = None
) -> TlsFiles:
    """The agent's server certificate, naming ``host`` (or this host's loopback if wildcard)
    and, with ``host_id``, its fleet name."""
    dns = ["localhost", socket.gethostname()]
    if host_id is not None:
        dns.append(agent_server_name(host_id))
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a host name
        ips, dns = ["127.0.0.1"], [*dns, host]
    else:
        ips = ["127.0.0.1", "::1"] if address.is_unspecified else [host]
    return ca.ensure_identity(pki / "agent", "agent", "server", ip_addresses=ips, dns_names=dns)


def l4_node_manager(agent: AgentSettings, root: Path) -> tuple[L4NodeManager, HealthChecker]:
    """The node's kernel load balancers: nftables in the agent's own namespace, checked by
    one health checker whose batches of changes re-apply them."""
    sink: list[L4NodeManager] = []
    checker = HealthChecker(
        NetworkProber(),
        lambda changes: sink[0].on_health_changes(changes),
        batch_count=agent.l4_health_batch_size,
        batch_delay=agent.l4_health_batch_delay,
    )
    announcer = None
    if agent.tier_bird_socket and agent.tier_vips_file:
        control = BirdControl(Path(agent.tier_bird_socket))
        announcer = BirdVipAnnouncer(Path(agent.tier_vips_file), control)
    vips = AnnouncingVipHolder(RealVipHolder(), LinkAnnouncer())
    dsr = RealDsrRouter() if announcer is not None else None
    # One listing of the dispatch map's counters serves a second of answers, and one
    # libnftables context serves every command (issue 34).
    engine = L4Engine(node_nft_ops(), flows_max_age=NODE_FLOWS_MAX_AGE)
    manager = L4NodeManager(root, engine, checker, vips, announcer, dsr)
    sink.append(manager)
    return manager, checker


def access_logs_of(
    settings: Settings, amphora_root: Path, held: HeldLogSockets | None = None
) -> AccessLogs:
    """The readers writing every amphora's access log on this host (``access_log``).

    ``held``: the sockets ``serve`` held at its start (``hold_embedded_access_logs``); else
    they are held here, before adoption: each adopted amphora's reader takes its own,
    ``AccessLogs.release_held`` the rest once adoption is done. With the socket keeper
    (``agent.log_socket_keeper``), the listeners it kept through the restart come first,
    with the connections queued in them; only those nothing listens on are held anew."""
    conf = settings.access_log
    state_dir = settings.state_dir.absolute()
    sockets = access_log_sockets(settings, amphora_root)
    keeper = attach_keeper(settings, amphora_root)
    kept = keeper.listeners() if keeper is not None else {}
    if held is None:
        held = HeldLogSockets.hold_stale(sockets, amphora_root)
    for path, listener in kept.items():
        held.add(path, listener)
    if kept:
        log.info("took %d access-log listeners back from the socket keeper", len(kept))
    return AccessLogs(
        conf.directory or state_dir / "access-logs",
        sockets,
        max_bytes=conf.max_bytes,
        backups=conf.backups,
        syslog_target=conf.syslog_target,
        held=held,
        keeper=keeper,
    )


class Supervisor(BackgroundLoop):
    """Calls ``check`` every ``interval`` seconds in a thread until stopped."""

    def __init__(
        self,
        check: Callable[[], object],
        interval: float = SUPERVISE_INTERVAL,
        *,
        first_at_once: bool = False,
    ) -> None:
        """``first_at_once``: the first round runs as soon as the thread starts."""
        self._check = check
        self._interval = interval
        self._first_at_once = first_at_once
        super().__init__("agent-supervisor", stop_timeout=30.0)

    def _run(self) -> None:
        if self._first_at_once and not self._stop.is_set():
            self._round()
        while not self._stop.wait(self._interval):
            self._round()

    def _round(self) -> None:
        # Top of the supervise loop: keep supervising whatever one round raised.
        try:
            self._check()
        except Exception:  # noqa: BLE001 - logged; the next round tries again
            log.exception("supervise round failed")


def _api_server(
    app: FastAPI, settings: Settings, tls: TlsFiles, listening: socket.socket | None
) -> AgentHttpsServer:
    """The agent's HTTPS API, on ``listening`` (a service manager's) or on a port it binds."""
    server = AgentHttpsServer(app, settings.agent.host, settings.agent.port, tls, listening)
    if server.port != settings.agent.port:
        log.warning(
            "the agent serves port %d, not agent.port %d: the controller calls the latter",
            server.port,
            settings.agent.port,
        )
    return server


def _metadata_proxies(settings: Settings, host: HostOps, state_dir: Path) -> MetadataProxies | None:
    if not settings.metadata.proxies:  # not even imported then: ~10 ms CPU of every start
        return None
    from lbaas.metadata.agent import metadata_proxies

    return metadata_proxies(settings, host, state_dir)


class AgentService:
    """Every part of a running agent; ``start`` and ``stop`` them together."""

    def __init__(
        self,
        settings: Settings,
        host: HostOps | None = None,
        listening: socket.socket | None = None,
        held_logs: HeldLogSockets | None = None,
    ) -> None:
        """``listening``: the API's socket, already listening (a service manager's);
        else the agent binds ``agent.host``:``agent.port`` itself. ``held_logs``: the
        access-log sockets ``serve`` held at its start."""
        state_dir = settings.state_dir.absolute()
        amphora_root = amphora_root_of(settings)
        # First: while nothing listens on them, every HAProxy's log forwarder spins.
        logs = access_logs_of(settings, amphora_root, held_logs)
        self.settings = settings.agent
        self.ca, self.tls, key = _identity(settings, state_dir)
        self.host = host if host is not None else host_ops_for(settings.agent)
        self.mode = settings.agent.mode
        self.manager = self._amphora_registry(settings, amphora_root, logs)
        self._adopt(settings, logs)
        self._haproxy_version: str | None = None
        self.certificates = AgentCertificates(self.tls, self_renewing=self.ca is not None)
        self.renewal = self._self_renewal(settings, state_dir)
        self.l4, self.l4_checker = l4_node_manager(settings.agent, state_dir / "l4")
        app = create_agent_app(self.manager, self.info, self.l4, self.certificates)
        self.server = _api_server(app, settings, self.tls, listening)
        # Its first round restarts the adopted HAProxies that died with the old agent, in
        # the background: the converges waiting for this agent need not wait for that.
        self.supervisor = Supervisor(self.manager.supervise, first_at_once=True)
        self.metadata = _metadata_proxies(settings, self.host, state_dir)
        self.prober = VipProber(
            self.manager.probe_subjects,
            settings.agent.vip_probe_interval,
            settings.agent.vip_probe_timeout,
        )
        self.heartbeat = HeartbeatSender(
            self.health_reports,
            key,
            health_manager_addresses(settings),
            interval=settings.health.heartbeat_interval,
            host_report=self.host_report,
            member_counters=settings.agent.heartbeat_member_counters,
        )

    def _amphora_registry(
        self, settings: Settings, amphora_root: Path, logs: AccessLogs
    ) -> AmphoraRegistry:
        # ACTIVE_STANDBY needs namespaces: a loopback agent runs no keepalived.
        keepalived = KeepalivedLauncher() if self.mode == "netns" else None
        # Orphans of its daemons (a killed keepalived's VRRP process) come to the agent,
        # which reaps them (``host.daemons``), whatever this host's PID 1 does.
        if not become_subreaper():
            log.warning("not a child subreaper: orphans of HAProxy/keepalived go to PID 1")
        return AmphoraRegistry(
            amphora_root,
            self.host,
            mode=self.mode,
            namespace_prefix=settings.agent.namespace_prefix,
            bridge_mappings=settings.agent.bridge_mappings,
            keepalived=keepalived,
            udp_checker=functools.partial(
                namespace_checker,
                batch_count=settings.agent.l4_health_batch_size,
                batch_delay=settings.agent.l4_health_batch_delay,
            ),
            access_logs=logs,
            spares=spare_pool_of(settings.agent, self.host, amphora_root),
        )

    def _adopt(self, settings: Settings, logs: AccessLogs) -> None:
        """The amphorae an earlier agent left, then what none of them claimed."""
        adopted = self.manager.restore(hold_dead=bool(settings.agent.bundle))
        if adopted:
            log.info("adopted amphorae %s", ", ".join(adopted))
        stale = logs.release_held() + logs.remove_stale_sockets()  # of deleted amphorae
        if stale:
            log.info("removed %d access-log sockets nothing listened on", len(stale))
        if self.manager.spares is not None:
            self.manager.spares.recover()  # after restore: the claimed ones are amphorae

    def _self_renewal(self, settings: Settings, state_dir: Path) -> RenewalLoop | None:
        """With the CA at hand (``lbaas serve``), the agent renews its own certificate;
        an enrolled agent's is renewed by the controller (``lbaas.fleet.cert_renewal``)."""
        interval = settings.health.certificate_renewal_interval
        if self.ca is None or interval <= 0:
            return None
        agent, pki = settings.agent, state_dir / "pki"

        def renew(_now: datetime.datetime) -> None:
            # Loaded again each round: a CA rotation may have changed the signer.
            ca = CertificateAuthority.load_or_create(pki)
            agent_identity(ca, pki, agent.host, agent.host_id)

        # A local check (no network): often, so a CA rotation's new signer is taken up
        # within seconds and `rotate-ca finish` need not wait an hour for this agent.
        return RenewalLoop([renew], min(interval, SELF_RENEWAL_INTERVAL))

    def health_reports(self) -> list[tuple[str, HealthReport]]:
        """Each amphora's statistics with its latest VIP probe results."""
        return [
            (amphora_id, with_probes(report, self.prober.results(amphora_id)))
            for amphora_id, report in self.manager.health_reports()
        ]

    def host_report(self) -> tuple[str, dict[str, object]]:
        """This round's host heartbeat: who this host is and what it runs."""
        agent = self.settings
        address = "" if agent.host in ("0.0.0.0", "::", "") else agent.host
        seen = HostAnnouncement(
            host_id=agent.host_id,
            address=address,
            port=self.server.port,
            zone=agent.zone,
            capacity=agent.capacity,
            amphorae=tuple(self.manager.amphora_ids()),
            vrrp=tuple(sorted(self.manager.vrrp_states().items())),
            # The amphorae's identity is this agent's certificate: its expiry is theirs
            # (read each round: it is renewed while the agent runs).
            cert_expiration=certificate_expiry(self.tls.cert),
            wire_version=WIRE_VERSION,
        )
        return host_sender(agent.host_id), to_host_payload(seen)

    @property
    def base_url(self) -> str:
        host = f"[{self.server.host}]" if ":" in self.server.host else self.server.host
        return f"https://{host}:{self.server.port}"

    def info(self) -> AgentInfo:
        if self._haproxy_version is None:
            self._haproxy_version = self.host.haproxy_version()
        fd_limit = self.host.haproxy_fd_limit()
        return AgentInfo(
            mode=self.mode,
            haproxy_version=self._haproxy_version,
            amphora_root=str(self.manager.root),
            amphorae=tuple(self.manager.amphora_ids()),
            max_connections=None if fd_limit is None else max_connections_for(fd_limit),
            access_log_dir=(
                None
                if self.manager.access_logs is None
                else str(self.manager.access_logs.socket_directory)
            ),
        )

    def start(self) -> None:
        """Serve as early as is safe. The amphorae are adopted (``restore``, in the
        constructor) and the L4 services restored before the API serves, so no request
        sees a half-loaded agent; restarting dead HAProxies is left to the supervisor's
        first round, concurrent with the API: each amphora's lock orders a converge
        against it, and a converge starts a dead HAProxy itself."""
        self.l4_checker.start()
        restored = self.l4.restore()
        if restored:
            log.info("restored L4 services %s", ", ".join(restored))
        self.server.start()
        self.supervisor.start()
        if self.manager.spares is not None:
            self.manager.spares.start()
        if self.metadata is not None:
            self.metadata.start()
        self.prober.start()
        self.heartbeat.start()
        if self.renewal is not None:
            self.renewal.start()
        log.info("agent (%s mode) listening on %s", self.mode, self.base_url)

    def stop(self, *, stop_haproxy: bool = False) -> None:
        """Stop the agent; HAProxy keeps serving unless ``stop_haproxy``."""
        # First: the tier's router stops sending this node flows while it can still serve.
        self.l4.withdraw_all()
        if self.renewal is not None:
            self.renewal.stop()
        self.heartbeat.stop()
        self.prober.stop()
        if self.metadata is not None:
            self.metadata.stop()
        self.supervisor.stop()
        self.server.stop()
        if self.manager.spares is not None:
            self.manager.spares.close()  # a spare never outlives the agent that knows it
        self.l4_checker.stop()
        if stop_haproxy:
            self.manager.stop_all()
        if self.manager.access_logs is not None:  # the keeper holds on for the next agent
            self.manager.access_logs.detach_keeper()


def _identity(
    settings: Settings, state_dir: Path
) -> tuple[CertificateAuthority | None, TlsFiles, bytes]:
    """The local CA (None with a bundle: the agent's host holds no CA key), the agent's
    TLS files and the heartbeat key: from its bundle, or from the state directory."""
    agent = settings.agent
    if agent.bundle:
        bundle = Path(agent.bundle)
        tls = bundle_tls(bundle)
        needed = (tls.cert, tls.key, tls.ca, bundle / HEARTBEAT_KEY_FILE)
        missing = [path for path in needed if not path.exists()]
        if missing:
            raise ConfigError(f"agent bundle {bundle} lacks {', '.join(map(str, missing))}")
        return None, tls, load_or_create_key(bundle / HEARTBEAT_KEY_FILE)
    pki = state_dir / "pki"
    ca = CertificateAuthority.load_or_create(pki)
    tls = agent_identity(ca, pki, agent.host, agent.host_id)
    return ca, tls, heartbeat_key(settings.health.heartbeat_key, state_dir)


def health_manager_addresses(settings: Settings) -> list[tuple[str, int]]:
    """Where heartbeats go: ``agent.health_managers``, else the local health manager."""
    if settings.agent.health_managers:
        addresses = []
        for item in settings.agent.health_managers:
            host, _, port = item.rpartition(":")
            addresses.append((host.strip("[]"), int(port)))
        return addresses
    target = settings.health.bind_host
    if target in ("0.0.0.0", "::", ""):
        target = "::1" if ":" in target else "127.0.0.1"
    return [(target, settings.health.bind_port)]


def run_agent(settings: Settings, stop: threading.Event | None = None) -> None:
    """Run the agent until SIGTERM/SIGINT (or ``stop`` is set); HAProxy keeps running."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    service = AgentService(settings)
    service.start()
    try:
        stop.wait()
    finally:
        service.stop()
