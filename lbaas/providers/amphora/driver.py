"""The amphora provider: each load balancer is one HAProxy run by an lbaas agent.

``apply`` renders the whole graph into one HAProxy configuration (``lbaas.render``) and
sends the amphora's whole desired state to its agent in one declarative, versioned call;
the agent validates it with ``haproxy -c`` and applies it the least disruptive way. A
SINGLE-topology load balancer has one amphora (a namespace or a loopback slot on the
agent's host). ``rebuild`` (failover) retires the current amphora and builds a new one on
the same VIP. Health arrives by heartbeat, so ``status`` returns None.

Allocations that would leak if forgotten — amphora records and their ports — are written
before the agent call and marked DELETED when retired; a converge that fails half-way is
simply repeated, since every step is idempotent.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

from lbaas.agent.client import AgentClient
from lbaas.agent.wire import AmphoraSpec, MemberNetwork, NetworkSpec, VipSpec, amphora_paths
from lbaas.certs.authority import CertificateAuthority
from lbaas.db import amphora_repo
from lbaas.db.engine import Database
from lbaas.errors import ConfigError
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.network.allocation import VipRequest, allocate_vip
from lbaas.providers.amphora.capabilities import AMPHORA_CAPABILITIES
from lbaas.providers.base import ApplyResult, ProviderCapabilities, ProviderContext, ProviderDriver
from lbaas.render.haproxy import HaproxyContext, render_haproxy_config

LOG = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def ping_script() -> str:
    """The external-check script PING monitors run (shipped inside the package)."""
    return str(files("lbaas.agent").joinpath("scripts/ping-check"))


class AmphoraProvider(ProviderDriver):
    description = "HAProxy data planes run by per-host lbaas agents (loopback or netns)."

    def __init__(self, context: ProviderContext) -> None:
        super().__init__(context)
        if context.database is None:
            raise ConfigError("the amphora provider needs the database")
        self._db: Database = context.database
        settings = context.settings
        pki = Path(settings.state_dir).absolute() / "pki"
        ca = CertificateAuthority.load_or_create(pki)
        tls = ca.ensure_identity(pki / "controller", "controller", "client")
        host = settings.agent.host
        self._agent_host = host
        url_host = f"[{host}]" if ":" in host else host
        self._client = AgentClient(f"https://{url_host}:{settings.agent.port}", tls=tls, timeout=30)
        self._maxconn = settings.providers.amphora_maxconn
        self._hard_stop_after = settings.providers.amphora_hard_stop_after or None

    def capabilities(self) -> ProviderCapabilities:
        return AMPHORA_CAPABILITIES

    def close(self) -> None:
        self._client.close()

    def _amphora_for(self, graph: LoadBalancer, rebuild: bool) -> tuple[str, list[str]]:
        """The amphora to converge, and ids of amphorae it replaces (failover)."""
        with self._db.write() as session:
            current = amphora_repo.amphorae_of(session, graph.id)
            retiring = [a.id for a in current] if rebuild else []
            keep = [a for a in current if a.id not in retiring]
            if keep:
                return keep[0].id, retiring
            amp = amphora_repo.create_amphora(
                session, graph.id, self._agent_host, graph.vip.address, _now()
            )
            return amp.id, retiring

    def _network_spec(self, graph: LoadBalancer, amphora_id: str, netns: bool) -> NetworkSpec:
        if not netns:
            return NetworkSpec()
        vip_subnet = next((s for s in graph.subnets if s.id == graph.vip.subnet_id), None)
        legs = []
        with self._db.write() as session:
            for subnet in graph.subnets:
                if subnet.id == graph.vip.subnet_id:
                    continue
                address = amphora_repo.port_address(session, amphora_id, subnet.id)
                if address is None:
                    address = allocate_vip(
                        session, VipRequest(subnet_id=subnet.id), amphora_id, _now()
                    ).address
                legs.append(
                    MemberNetwork(
                        network_id=subnet.network_id,
                        subnet_cidr=subnet.cidr,
                        address=address,
                        host_address=subnet.gateway_ip,
                    )
                )
        host_vip = vip_subnet.gateway_ip if vip_subnet is not None else None
        return NetworkSpec(vip_host_address=host_vip, member_networks=tuple(legs))

    def apply(self, graph: LoadBalancer, *, rebuild: bool = False) -> ApplyResult:
        amphora_id, retiring = self._amphora_for(graph, rebuild)
        for old in retiring:
            self._client.delete_amphora(old)
            with self._db.write() as session:
                amphora_repo.set_status(session, old, "DELETED", _now())
            LOG.info("amphora %s of %s retired for failover", old, graph.id)
        info = self._client.info()
        paths = amphora_paths(info.amphora_root, amphora_id)
        context = HaproxyContext(
            bind_address=graph.vip.address,
            runtime_socket=paths.runtime_socket,
            state_dir=paths.state_dir,
            maxconn_default=min(self._maxconn, info.max_connections or self._maxconn),
            hard_stop_after=self._hard_stop_after,
            external_check_script=ping_script(),
        )
        vip_subnet = next((s for s in graph.subnets if s.id == graph.vip.subnet_id), None)
        spec = AmphoraSpec(
            version=time.time_ns(),
            loadbalancer_id=graph.id,
            haproxy_config=render_haproxy_config(graph, context),
            vip=VipSpec(
                address=graph.vip.address,
                subnet_cidr=vip_subnet.cidr if vip_subnet else f"{graph.vip.address}/32",
                network_id=graph.vip.network_id or "vip",
            ),
            network=self._network_spec(graph, amphora_id, info.mode == "netns"),
        )
        status = self._client.put_amphora(amphora_id, spec)
        with self._db.write() as session:
            amphora_repo.mark_serving(session, amphora_id, _now())
        return ApplyResult(serving=status.running, detail=status.last_outcome or "")

    def delete(self, loadbalancer_id: LoadBalancerId) -> None:
        with self._db.read() as session:
            amphorae = [a.id for a in amphora_repo.amphorae_of(session, loadbalancer_id)]
        for amphora_id in amphorae:
            self._client.delete_amphora(amphora_id)
            with self._db.write() as session:
                amphora_repo.set_status(session, amphora_id, "DELETED", _now())

    def status(self, loadbalancer_id: LoadBalancerId) -> HealthReport | None:
        return None
