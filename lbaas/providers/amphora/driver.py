"""The amphora provider: each load balancer is one HAProxy run by an lbaas agent.

``apply`` renders the whole graph into one HAProxy configuration (``lbaas.render``) and
sends the amphora's whole desired state to its agent in one declarative, versioned call;
the agent validates it with ``haproxy -c`` and applies it the least disruptive way. A
SINGLE-topology load balancer has one amphora (a namespace or a loopback slot on the
agent's host). ``rebuild`` (failover) builds a new amphora on the same VIP and then
retires the current one (in loopback mode, where both would need the VIP's ports, the
other way round). Health arrives by heartbeat, so ``status`` returns None.

Allocations that would leak if forgotten — amphora records and their ports — are written
through an ``AmphoraStore`` before the agent call and marked DELETED when retired; every
such write is fenced by the converge job's lease (``store.base``), so a worker that lost its
lease creates nothing. A converge that fails half-way is simply repeated, since every step
is idempotent.

Each amphora lives on one agent host of the fleet (``compute_id``): the store places a
new one on the least-loaded live host of the load balancer's zone (``placement``), and the
provider talks to that host's agent through a per-host client (``AgentPool``). With no
host enrolled at all, the one agent of ``settings.agent`` is used, as before fleets.

The agent is sent the rendered text and, beside it, the facts it needs about that text
(``HaproxyFacts``: sockets, maxconn, server weights, the digest of the rest), taken from the
same render, so the agent never parses the text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from lbaas.certs.authority import CertificateAuthority
from lbaas.certs.kek import load_key_ring
from lbaas.db.secrets.secret_vault import SecretVault
from lbaas.errors import AgentUnreachable, ConfigError, PermanentError
from lbaas.fleet.client import AgentClient
from lbaas.fleet.client_pool import AgentPool, tls_client_factory
from lbaas.fleet.peer_versions import CALLED_FORGET_AFTER, PeerVersions
from lbaas.keyrefs.base import KeyMaterial
from lbaas.keyrefs.configured import barbican_material, routed
from lbaas.keyrefs.vault_material import VaultMaterial
from lbaas.model.enums import HostStatus, Topology
from lbaas.model.fleet import HostAddress
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.providers.amphora.capabilities import amphora_capabilities
from lbaas.providers.amphora.kernel_spec import split_udp, vip_filter
from lbaas.providers.amphora.store.base import (
    AgentLocation,
    AmphoraStore,
    PairMember,
    PairSite,
    PairStore,
)
from lbaas.providers.amphora.store.database import DatabaseAmphoraStore
from lbaas.providers.amphora.tls_material import tls_bundle
from lbaas.providers.amphora.topology import PairConverger, VrrpTimers, pair_filter
from lbaas.providers.base import ApplyResult, ProviderCapabilities, ProviderContext, ProviderDriver
from lbaas.render.haproxy import HaproxyContext, RenderedHaproxy, render_haproxy
from lbaas.render.haproxy.context import HaproxyPeers
from lbaas.wire.amphora import (
    SPEC_FORMAT,
    AgentInfo,
    AmphoraSpec,
    HaproxyFacts,
    MemberNetwork,
    NetworkSpec,
    ProbedPort,
    ServerSetting,
    VipSpec,
    VrrpSpec,
    amphora_paths,
)
from lbaas.wire.versions import UNSTATED, speaks

if TYPE_CHECKING:
    from lbaas.db.jobs.job_queue import Claim

LOG = logging.getLogger(__name__)


def ping_script() -> str:
    """The external-check script PING monitors run (shipped inside the package)."""
    return str(files("lbaas.amphora").joinpath("scripts/ping-check"))


def haproxy_facts(rendered: RenderedHaproxy) -> HaproxyFacts:
    """The wire form of what the agent needs to know about a rendered configuration."""
    return HaproxyFacts(
        runtime_socket=rendered.runtime_socket,
        server_state_file=rendered.server_state_file,
        maxconn=rendered.maxconn,
        servers=tuple(
            ServerSetting(backend=s.backend, server=s.server, weight=s.weight, disabled=s.disabled)
            for s in rendered.servers
        ),
        fixed_digest=rendered.fixed_digest,
    )


class AmphoraProvider(ProviderDriver):
    description = "HAProxy data planes run by per-host lbaas agents (loopback or netns)."

    def __init__(
        self,
        context: ProviderContext,
        *,
        store: AmphoraStore | None = None,
        client: AgentClient | None = None,
        agents: AgentPool | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Build from settings; ``store``, ``client`` (every host's agent) or ``agents``
        replace the database and the agents; ``clock`` tells how old a host's last
        heartbeat is."""
        super().__init__(context)
        if store is None:
            if context.database is None:
                raise ConfigError("the amphora provider needs the database")
            store = DatabaseAmphoraStore(context.database)
        self._store = store
        # ACTIVE_STANDBY's allocations: the database store has them; a test store may not.
        self._pairs: PairStore | None = store if isinstance(store, PairStore) else None
        settings = context.settings
        self._agent_host = settings.agent.host
        if agents is None:
            agents = (
                AgentPool(lambda _host: client, client)
                if client is not None
                else self._agent_pool()
            )
        self._agents = agents
        self._maxconn = settings.providers.amphora_maxconn
        self._hard_stop_after = settings.providers.amphora_hard_stop_after or None
        self._timers = VrrpTimers(
            advert_interval_ms=settings.providers.amphora_vrrp_advert_interval_ms,
            realtime_priority=settings.providers.amphora_vrrp_realtime_priority or None,
        )
        self._secret_vault: SecretVault | None = None
        self.skipped_removals: list[tuple[str, str]] = []
        """(host id, amphora id) of each removal not sent: its host DOWN, or silent."""
        self._clock = clock
        # A failover does not call a host that has missed two heartbeats (see _remove).
        self._host_silent_after = 2 * settings.health.heartbeat_interval
        self._barbican = barbican_material(settings.keymanager)

    def _agent_pool(self) -> AgentPool:
        settings = self.context.settings
        pki = Path(settings.state_dir).absolute() / "pki"
        ca = CertificateAuthority.load_or_create(pki)
        tls = ca.ensure_identity(pki / "controller", "controller", "client")
        host = self._agent_host
        url_host = f"[{host}]" if ":" in host else host
        versions = PeerVersions(
            CALLED_FORGET_AFTER
        )  # the agents' wire versions, as this worker hears them
        legacy = AgentClient(
            f"https://{url_host}:{settings.agent.port}", tls=tls, timeout=30, versions=versions
        )
        # A failover's fresh client does not wait for a silent agent's handshake either: a
        # paused agent's kernel accepts the connection too.
        return AgentPool(
            tls_client_factory(tls, versions=versions),
            legacy,
            tls_client_factory(tls, handshake_timeout=None, versions=versions),
            versions,
        )

    def _vault(self) -> SecretVault | None:
        """The key manager's vault, opened at the first TLS listener (its key file is made
        by the API process that stored the secrets)."""
        if self._secret_vault is None and self.context.database is not None:
            path = self.context.settings.kek_path
            ring = load_key_ring(path)
            if ring is not None:
                self._secret_vault = SecretVault(self.context.database, ring, path)
        return self._secret_vault

    def _key_material(self) -> KeyMaterial:
        return routed(VaultMaterial(self._vault()), self._barbican)

    def capabilities(self) -> ProviderCapabilities:
        return amphora_capabilities(self.context.settings.agent.mode == "netns")

    def close(self) -> None:
        self._agents.close()

    def _remove(self, amphora_id: str, *, failover: bool) -> None:
        """Ask the amphora's agent to remove it. A host whose row says DOWN gets no call
        at all (a lost host would hold the failover for the connect timeout): the retired
        row, still naming the host, is the record of what was skipped, and the stale
        amphora cleaner removes the amphora when the host is heard from again and lists
        it (``lbaas.health.fleet``). An unreachable UP host is tolerated only when the
        amphora is being failed over.

        A failover does not call a host still UP but silent for two heartbeat intervals
        either: the health manager may have failed the amphora over before marking its
        host DOWN, and the call to a lost host waited out the 3 s connect timeout (issue
        29: host loss p50 4.4 s). If the host lives, its next heartbeat lists the retired
        amphora and the same cleaner removes it."""
        where = self._store.agent_of(amphora_id)
        if where is not None and (
            where.status is HostStatus.DOWN or (failover and self._host_silent(where))
        ):
            self.skipped_removals.append((where.host.host_id, amphora_id))
            LOG.warning(
                "amphora %s: host %s is %s, its agent not called; removed when the host is back",
                amphora_id,
                where.host.host_id,
                "DOWN" if where.status is HostStatus.DOWN else "silent",
            )
            return
        try:
            if failover and where is not None:
                # Its host is probably the silent one: a pooled connection to it held a
                # partitioned host's failover for the 30 s read timeout (measured).
                client = self._agents.fresh(where.host)
                try:
                    client.delete_amphora(amphora_id)
                finally:
                    client.close()
            else:
                self._agents.client(None if where is None else where.host).delete_amphora(
                    amphora_id
                )
        except AgentUnreachable as exc:
            if where is None or not failover:
                raise
            LOG.warning(
                "agent of amphora %s (host %s) unreachable: retired without it; removed "
                "when the host is back (%s)",
                amphora_id,
                where.host.host_id,
                exc.operator_message,
            )

    def _host_silent(self, where: AgentLocation) -> bool:
        """Whether the host has missed two heartbeats (never heard: not silent, it may
        predate host heartbeats)."""
        if where.heard_at is None:
            return False
        return self._clock() - where.heard_at > self._host_silent_after

    def _network_spec(
        self, graph: LoadBalancer, fence: Claim, amphora_id: str, netns: bool
    ) -> NetworkSpec:
        if not netns:
            return NetworkSpec()
        vip_subnet = next((s for s in graph.subnets if s.id == graph.vip.subnet_id), None)
        member_subnets = [s for s in graph.subnets if s.id != graph.vip.subnet_id]
        addresses = self._store.member_addresses(
            fence, amphora_id, [subnet.id for subnet in member_subnets]
        )
        legs = tuple(
            MemberNetwork(
                network_id=subnet.network_id,
                subnet_cidr=subnet.cidr,
                address=addresses[subnet.id],
                host_address=subnet.gateway_ip,
                gateway=subnet.gateway_ip,
                mtu=subnet.mtu,
            )
            for subnet in member_subnets
        )
        host_vip = vip_subnet.gateway_ip if vip_subnet is not None else None
        return NetworkSpec(vip_host_address=host_vip, member_networks=legs)

    def apply(self, graph: LoadBalancer, fence: Claim, *, rebuild: bool = False) -> ApplyResult:
        if graph.topology is Topology.ACTIVE_STANDBY:
            return self._apply_pair(graph, fence, rebuild)
        choice = self._store.choose_amphora(
            fence,
            zone=self._store.compute_zone(graph.availability_zone),
            vip_address=graph.vip.address,
            rebuild=rebuild,
            legacy_host=self._agent_host,
        )
        amphora_id = choice.amphora_id
        client = self._agents.client(choice.host)
        info = client.info()
        # Make before break where the new amphora has a namespace of its own: it serves the
        # VIP (announced by gratuitous ARP) before the old one goes, so a failover's outage
        # is the neighbours' switch, not the rebuild (as Octavia's failover flow orders it).
        # In loopback mode the old HAProxy holds the VIP's ports: it must go first; so
        # must it for an agent of the release before, which announces the VIP before its
        # HAProxy listens and would fail an IPv6 VIP's duplicate address detection.
        version = info.wire_version or UNSTATED
        take_over = info.mode == "netns" and speaks(version, "vip_take_over")
        before = () if take_over else choice.retiring
        self._retire(fence, graph, before)
        spec = self._spec(info, graph, fence, amphora_id)
        status = client.put_amphora(amphora_id, spec)
        self._store.mark_serving(fence, amphora_id)
        self._retire(fence, graph, tuple(a for a in choice.retiring if a not in before))
        return ApplyResult(serving=status.running, detail=status.last_outcome or "")

    def _retire(self, fence: Claim, graph: LoadBalancer, amphorae: tuple[str, ...]) -> None:
        """Remove failed-over ``amphorae`` from their hosts, then mark them DELETED (a
        removal that fails leaves them live: the retried rebuild resumes the new one)."""
        for old in amphorae:
            self._remove(old, failover=True)
            self._store.retire(fence, old)
            LOG.info("amphora %s of %s retired for failover", old, graph.id)

    def _spec(
        self,
        info: AgentInfo,
        graph: LoadBalancer,
        fence: Claim,
        amphora_id: str,
        pair: tuple[HaproxyPeers, VrrpSpec] | None = None,
    ) -> AmphoraSpec:
        """The whole spec of one amphora; ``pair``: its peers and VRRP (ACTIVE_STANDBY)."""
        netns = info.mode == "netns"
        paths = amphora_paths(info.amphora_root, amphora_id, info.access_log_dir)
        tls = tls_bundle(graph, self._key_material(), paths.tls_dir)
        context = HaproxyContext(
            bind_address=graph.vip.address,
            runtime_socket=paths.runtime_socket,
            state_dir=paths.state_dir,
            maxconn_default=min(self._maxconn, info.max_connections or self._maxconn),
            hard_stop_after=self._hard_stop_after,
            external_check_script=ping_script(),
            peers=None if pair is None else pair[0],
            listener_tls=tls.by_listener,
            pool_tls=tls.by_pool,
            minimum_tls_version=self.context.settings.api.minimum_tls_version,
            access_log_socket=(
                paths.access_log_socket
                if self.context.settings.access_log.connection_logging
                else None
            ),
        )
        haproxy_graph, udp_listeners = split_udp(graph)
        rendered = render_haproxy(haproxy_graph, context)
        vip_subnet = next((s for s in graph.subnets if s.id == graph.vip.subnet_id), None)
        filtered = vip_filter(graph) if netns else None
        return AmphoraSpec(
            spec_format=SPEC_FORMAT,
            version=time.time_ns(),
            loadbalancer_id=graph.id,
            haproxy_config=rendered.text,
            haproxy_facts=haproxy_facts(rendered),
            vip=VipSpec(
                address=graph.vip.address,
                subnet_cidr=vip_subnet.cidr if vip_subnet else f"{graph.vip.address}/32",
                network_id=graph.vip.network_id or "vip",
                gateway=vip_subnet.gateway_ip if vip_subnet and netns else None,
                mtu=vip_subnet.mtu if vip_subnet and netns else None,
            ),
            network=self._network_spec(graph, fence, amphora_id, netns),
            tls_files=tuple(tls.files.values()),
            vip_filter=filtered if pair is None else pair_filter(filtered, pair[1]),
            udp_listeners=udp_listeners,
            vip_probes=tuple(
                ProbedPort(listener_id=li.id, port=li.protocol_port)
                for li in haproxy_graph.listeners
                if li.admin_state_up
            ),
            vrrp=None if pair is None else pair[1],
        )

    def _apply_pair(self, graph: LoadBalancer, fence: Claim, rebuild: bool) -> ApplyResult:
        """ACTIVE_STANDBY: two amphorae sharing the VIP by VRRP (``topology``), each on its
        own host's agent."""
        if self._pairs is None:
            raise PermanentError("this amphora store keeps no ACTIVE_STANDBY pairs")
        if self.context.settings.agent.mode != "netns":  # refused before anything is built
            raise PermanentError("ACTIVE_STANDBY needs agents in netns mode")
        infos: dict[str, AgentInfo] = {}

        def build(
            graph: LoadBalancer,
            fence: Claim,
            member: PairMember,
            peers: HaproxyPeers,
            vrrp: VrrpSpec,
        ) -> AmphoraSpec:
            key = "" if member.host is None else member.host.host_id
            if key not in infos:
                infos[key] = self._netns_info(member.host)
            return self._spec(infos[key], graph, fence, member.amphora_id, (peers, vrrp))

        site = PairSite(
            zone=self._store.compute_zone(graph.availability_zone),
            legacy_host=self._agent_host,
            single_host=self.context.settings.agent.host_id,
        )
        converger = PairConverger(
            self._store,
            self._pairs,
            self._agents.client,
            lambda amphora_id: self._remove(amphora_id, failover=True),
            site,
            self._timers,
        )
        status = converger.converge(graph, fence, rebuild, build)
        return ApplyResult(serving=status.running, detail=status.last_outcome or "")

    def _netns_info(self, host: HostAddress | None) -> AgentInfo:
        """The host's agent facts; a pair needs every member's agent in netns mode."""
        info = self._agents.client(host).info()
        if info.mode != "netns":
            name = self._agent_host if host is None else host.host_id
            raise PermanentError(
                f"ACTIVE_STANDBY needs agents in netns mode; agent {name} runs in {info.mode} mode"
            )
        return info

    def delete(self, loadbalancer_id: LoadBalancerId, fence: Claim) -> None:
        for amphora_id in self._store.live_amphorae(loadbalancer_id):
            self._remove(amphora_id, failover=False)
            self._store.retire(fence, amphora_id)

    def status(self, loadbalancer_id: LoadBalancerId) -> HealthReport | None:
        return None
