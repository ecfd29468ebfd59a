"""Running the health manager: heartbeat receiver, flusher, stale sweeper, distributed poll.

``start_health_manager`` is what ``lbaas health`` and ``lbaas serve`` call; it returns a
function that stops both.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from lbaas.certs.authority import CertificateAuthority
from lbaas.certs.renewal import RenewalLoop
from lbaas.config import Settings
from lbaas.coordination.engines import open_leadership
from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue
from lbaas.db.loadbalancers.loadbalancer_repo import active_loadbalancers_of, loadbalancer_kept
from lbaas.fleet.client import AgentClient
from lbaas.fleet.client_pool import AgentPool, tls_client_factory
from lbaas.fleet.peer_versions import HEARD_FORGET_AFTER, PeerVersions
from lbaas.health.certificate_metrics import CertificateExpiryTimestamps
from lbaas.health.certificates import FleetCertificates, enrolled_hosts
from lbaas.health.distributed_poll import DistributedStatusPoller, Reporter
from lbaas.health.fleet import HostSweeper, SqlHostRegistry, StaleAmphoraCleaner
from lbaas.health.flusher import Flusher, flush_interval
from lbaas.health.host_probe import HostVerdicts, TcpHostProbe
from lbaas.health.lb_breaker import LoadBalancerBreaker, SqlRetirementHistory
from lbaas.health.metrics import HealthManagerCollector
from lbaas.health.node_flows import fold_node_flows
from lbaas.health.pair_probe import PeerPortProbe
from lbaas.health.probe import ListenerProbe
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.health.sql_store import SqlHealthStore
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.metrics.process import ProcessMetrics
from lbaas.metrics.wire_versions import WireVersionCollector
from lbaas.model.graph import LoadBalancer
from lbaas.model.health import HealthReport
from lbaas.providers.base import ProviderContext
from lbaas.providers.distributed.driver import DistributedProvider
from lbaas.providers.registry import load_providers
from lbaas.wire.heartbeat.envelope import ReplayGuard
from lbaas.wire.heartbeat.key import heartbeat_key


def _controller_agents(settings: Settings, versions: PeerVersions) -> AgentPool:
    """Clients of the fleet's agents with the controller's identity (stale cleanup)."""
    pki = settings.state_dir.absolute() / "pki"
    ca = CertificateAuthority.load_or_create(pki)
    tls = ca.ensure_identity(pki / "controller", "controller", "client")
    agent = settings.agent
    host = f"[{agent.host}]" if ":" in agent.host else agent.host
    legacy = AgentClient(f"https://{host}:{agent.port}", tls=tls, timeout=10, versions=versions)
    # Its sweeps must not wait for a silent agent's handshake (CONNECT_TIMEOUT is enough).
    factory = tls_client_factory(tls, timeout=10, handshake_timeout=None, versions=versions)
    return AgentPool(factory, legacy, versions=versions)


def _breaker(settings: Settings, database: Database) -> LoadBalancerBreaker:
    health = settings.health
    return LoadBalancerBreaker(
        SqlRetirementHistory(database),
        limit=health.lb_failover_limit,
        window=health.lb_failover_window,
    )


def start_health_manager(
    settings: Settings,
    database: Database,
    notify: Callable[[], None] = lambda: None,
    metrics: ProcessMetrics | None = None,
    heartbeat_socket: socket.socket | None = None,
) -> Callable[[], None]:
    """``notify`` wakes the workers when a failover job was committed; ``metrics``, if
    given, is the registry the manager's counts are shown in (the API's, in ``serve``);
    ``heartbeat_socket``: the receiver's, if the caller bound it."""
    health = settings.health
    store = SqlHealthStore(database, notify)
    # A returning host's stray amphorae (an old MASTER) go at its first heartbeat.
    stray_heard = threading.Event()
    hosts = SqlHostRegistry(database, on_stray=stray_heard.set)
    versions = PeerVersions(
        HEARD_FORGET_AFTER
    )  # the agents' wire versions: heartbeats and answers say them
    receiver = _receiver(settings, store, hosts, heartbeat_socket, versions)
    receiver.start()  # first: a taken port stops start-up with no thread left running
    flusher = Flusher(store, flush_interval(health.stale_after))
    flusher.start()
    agents = _controller_agents(settings, versions)
    sweeper, host_sweeper = _sweepers(settings, database, store, hosts, agents, stray_heard)
    renewal = _certificate_renewal(settings, database, agents, metrics)
    if metrics is not None:
        metrics.register(HealthManagerCollector(receiver, sweeper))
    stop = threading.Event()
    threads = _start_sweepers(stop, sweeper, host_sweeper, settings)
    stop_polling = _start_distributed_poll(settings, database, store, stop)

    def stop_all() -> None:
        stop.set()
        renewal.stop()
        stray_heard.set()  # the host sweeper waits on it
        for thread in threads:
            thread.join(5)
        stop_polling()
        receiver.stop()
        flusher.stop()
        agents.close()

    return stop_all


def _sweepers(
    settings: Settings,
    database: Database,
    store: SqlHealthStore,
    hosts: SqlHostRegistry,
    agents: AgentPool,
    stray_heard: threading.Event,
) -> tuple[StaleAmphoraSweeper, HostSweeper]:
    """The stale-amphora sweeper and the host sweeper, each using the other."""
    health = settings.health
    sweeper = StaleAmphoraSweeper(
        store,
        stale_after=health.stale_after,
        failover_threshold=health.failover_threshold,
        probe=ListenerProbe(timeout=health.probe_timeout) if health.probe_timeout else None,
        breaker=_breaker(settings, database),
        silent_hosts=lambda: host_sweeper.mark_down(),  # bound below, before any sweep
        probe_lead=health.probe_timeout,
        restarting_hosts=lambda: host_sweeper.restarting,
        pair_probe=PeerPortProbe(timeout=health.probe_timeout) if health.probe_timeout else None,
    )
    host_sweeper = HostSweeper(
        hosts,
        stale_after=health.host_stale_after,
        cleaner=StaleAmphoraCleaner(hosts, agents),
        wake=stray_heard,
        on_down=sweeper.fail_over_hosts,
        probe_lead=health.probe_timeout,
        on_suspect=sweeper.suspect_hosts,
        verdicts=_host_verdicts(settings),
        restart_grace=health.agent_restart_grace,
        settle=health.stale_after,
    )
    return sweeper, host_sweeper


def _receiver(
    settings: Settings,
    store: SqlHealthStore,
    hosts: SqlHostRegistry,
    bound: socket.socket | None,
    versions: PeerVersions,
) -> HeartbeatReceiver:
    health = settings.health
    return HeartbeatReceiver(
        HeartbeatProcessor(store),
        heartbeat_key(health.heartbeat_key, settings.state_dir.absolute()),
        ReplayGuard(max_age=max(30.0, health.stale_after * 3)),
        host=health.bind_host,
        port=health.bind_port,
        hosts=hosts,
        bound=bound,
        versions=versions,
    )


def _certificate_renewal(
    settings: Settings, database: Database, agents: AgentPool, metrics: ProcessMetrics | None
) -> RenewalLoop:
    """The rounds renewing the controller's and the agents' certificates (started unless
    ``health.certificate_renewal_interval`` is 0), and their expiry metric."""
    certificates = FleetCertificates(
        settings.state_dir.absolute() / "pki",
        lambda: enrolled_hosts(database),
        agents.fresh,
        agents.versions,
    )
    interval = settings.health.certificate_renewal_interval
    renewal = RenewalLoop([certificates.renew_due], interval)
    if interval > 0:
        renewal.start()
    if metrics is not None:
        metrics.register(CertificateExpiryTimestamps(certificates))
        metrics.register(WireVersionCollector(agents.versions))
    return renewal


def _host_verdicts(settings: Settings) -> HostVerdicts | None:
    """The probes telling a restarting agent's host from a lost one (None with no grace
    or no probe timeout): a connect each, again every second while the silence lasts."""
    health = settings.health
    if health.agent_restart_grace <= 0 or health.probe_timeout <= 0:
        return None
    probe = TcpHostProbe(timeout=health.probe_timeout)
    return HostVerdicts(probe, every=max(health.probe_timeout, 1.0))


def host_sweep_interval(host_stale_after: float) -> float:
    """How often the host sweeper looks for silent hosts: a tenth of ``host_stale_after``
    (one indexed query), at least 0.1 s."""
    return max(0.1, host_stale_after / 10)


def _start_sweepers(
    stop: threading.Event,
    sweeper: StaleAmphoraSweeper,
    host_sweeper: HostSweeper,
    settings: Settings,
) -> list[threading.Thread]:
    """The amphora and host sweepers, each on its own thread, until ``stop`` is set."""
    health = settings.health
    threads = [
        threading.Thread(
            target=sweeper.run,
            args=(stop, max(0.2, health.stale_after / 3)),
            name="stale-sweeper",
            daemon=True,
        ),
        threading.Thread(
            target=host_sweeper.run,
            # Finer than the amphora sweep: a host marked DOWN has its amphorae failed
            # over in the same iteration, so this interval is part of a host loss's outage.
            args=(stop, host_sweep_interval(health.host_stale_after)),
            name="host-sweeper",
            daemon=True,
        ),
    ]
    for thread in threads:
        thread.start()
    return threads


#: Seconds a distributed load balancer's last converge must have settled before the
#: status poll queues another because a port binding moved.
LOCALITY_RECONVERGE_GAP = 5.0


def _round_reporter(
    database: Database, provider: DistributedProvider, store: SqlHealthStore
) -> Reporter:
    """One poll round's reporter: every node read once, then each load balancer combined,
    and each node's flows folded into its listeners' stats (``node_flows``)."""
    views = provider.node_views()

    def report(graph: LoadBalancer) -> HealthReport | None:
        health = provider.report(
            graph,
            lambda lb_id: loadbalancer_kept(database, lb_id),
            # A port binding moved under a node: a converge reads the bindings afresh. At
            # most one per LOCALITY_RECONVERGE_GAP: a node that keeps differing (its apply
            # fails) must not turn the 2 s poll into a 2 s converge loop.
            lambda lb_id: job_queue.enqueue_if_settled(
                database, lb_id, time.time(), LOCALITY_RECONVERGE_GAP
            ),
            views,
        )
        fold_node_flows(store, graph, views.by_node)
        return health

    return report


def _start_distributed_poll(
    settings: Settings, database: Database, store: SqlHealthStore, stop: threading.Event
) -> Callable[[], None]:
    """Poll the nodes of distributed load balancers, if that provider is enabled."""
    name = "distributed"
    if name not in settings.providers.enabled:
        return lambda: None
    provider = load_providers([name], ProviderContext(settings, database))[name]
    if not isinstance(provider, DistributedProvider):  # another entry point took the name
        provider.close()
        return lambda: None
    poller = DistributedStatusPoller(
        store,
        lambda: active_loadbalancers_of(database, name),
        lambda: _round_reporter(database, provider, store),
    )
    # Several health managers: one of them polls (leader election on [coordination]).
    leadership = open_leadership(settings, "distributed-poll")
    leads = leadership.start().leads if leadership is not None else (lambda: True)
    thread = threading.Thread(
        target=poller.run,
        args=(stop, settings.providers.distributed_status_interval, leads),
        name="distributed-poll",
        daemon=True,
    )
    thread.start()

    def stop_polling() -> None:
        thread.join(5)
        if leadership is not None:
            leadership.stop()
        provider.close()

    return stop_polling
