"""The whole agent service over real mutual TLS, with a real HAProxy and real heartbeats."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from agent_e2e_support import (
    LISTENER,
    Backend,
    Server,
    free_port,
    haproxy_config,
    http_get,
    random_loopback,
)

from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.config import AgentSettings, HealthSettings, Settings
from lbaas.errors import AgentUnreachable
from lbaas.fleet.agent_service import AgentService
from lbaas.fleet.client import AgentClient
from lbaas.host.runtime_api import MasterCli
from lbaas.wire.amphora import AmphoraSpec, VipSpec, amphora_paths
from lbaas.wire.heartbeat.envelope import open_envelope
from lbaas.wire.heartbeat.host_codec import is_host_payload
from lbaas.wire.heartbeat.report_codec import from_payload
from tests.e2e.amphora.serve_process import kill_keepers_of
from tests.support.udp import udp_receiver

pytestmark = pytest.mark.haproxy
KEY = "e2e-heartbeat-key"


@pytest.fixture
def heartbeats() -> Iterator[socket.socket]:
    with udp_receiver(30) as sock:
        yield sock


@pytest.fixture
def service(short_dir: Path, heartbeats: socket.socket) -> Iterator[AgentService]:
    settings = Settings(
        state_dir=short_dir,
        agent=AgentSettings(host="127.0.0.1", port=0),
        health=HealthSettings(
            bind_host="127.0.0.1",
            bind_port=heartbeats.getsockname()[1],
            heartbeat_key=KEY,
            heartbeat_interval=0.2,
        ),
    )
    agent = AgentService(settings)
    agent.start()
    try:
        yield agent
    finally:
        agent.stop()
        for amphora_id in agent.manager.amphora_ids():
            agent.manager.delete(amphora_id)
        kill_keepers_of(short_dir)  # the access-log socket keeper it started


@pytest.fixture
def controller_tls(service: AgentService, short_dir: Path) -> TlsFiles:
    return service.ca.ensure_identity(short_dir / "pki" / "controller", "controller", "client")


def test_client_with_the_ca_certificate_is_served(
    service: AgentService, controller_tls: TlsFiles
) -> None:
    with AgentClient(service.base_url, tls=controller_tls) as client:
        info = client.info()
    assert info.mode == "loopback" and info.haproxy_version.startswith("2.")
    assert info.amphora_root == str(service.manager.root)


def test_client_without_certificate_is_refused(service: AgentService) -> None:
    anonymous = ssl.create_default_context(cafile=str(service.ca.ca_file))
    with AgentClient(service.base_url, ssl_context=anonymous) as client:
        with pytest.raises(AgentUnreachable):
            client.info()
    # And not even a plain TLS handshake without a certificate gets an HTTP answer.
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{service.base_url}/v1/info", verify=anonymous)


def test_client_with_a_foreign_certificate_is_refused(
    service: AgentService, short_dir: Path
) -> None:
    other = CertificateAuthority.load_or_create(short_dir / "other-ca")
    stranger = other.ensure_identity(short_dir / "stranger", "controller", "client")
    mixed = TlsFiles(cert=stranger.cert, key=stranger.key, ca=service.ca.ca_file)
    with AgentClient(service.base_url, tls=mixed) as client:
        with pytest.raises(AgentUnreachable):
            client.info()


def test_put_serves_traffic_twice_without_reload_and_heartbeats(
    service: AgentService,
    controller_tls: TlsFiles,
    backends: list[Backend],
    heartbeats: socket.socket,
) -> None:
    vip = random_loopback()
    port = free_port(vip)
    with AgentClient(service.base_url, tls=controller_tls) as client:
        paths = amphora_paths(client.info().amphora_root, "amp-svc")
        config = haproxy_config(
            Path(paths.directory), vip, port, [Server("m0", "127.0.0.1", backends[0].port)]
        )
        spec = AmphoraSpec(
            version=1,
            loadbalancer_id="lb-svc",
            **config,
            vip=VipSpec(address=vip, subnet_cidr=f"{vip}/32", network_id="lo"),
        )
        first = client.put_amphora("amp-svc", spec)
        assert first.running and first.last_outcome == "STARTED"
        assert http_get(vip, port) == "backend-a"
        master = MasterCli.at(Path(paths.directory) / "master.sock")
        reloads = master.show_proc().master.reloads
        second = client.put_amphora("amp-svc", spec)
        assert second.last_outcome == "UNCHANGED" and second.master_pid == first.master_pid
        assert second.reloads == 0 and master.show_proc().master.reloads == reloads

        envelope = open_envelope(heartbeats.recv(65536), KEY.encode())
        while is_host_payload(envelope.payload):  # the host's own heartbeat, each round
            assert envelope.sender == "host:local"
            envelope = open_envelope(heartbeats.recv(65536), KEY.encode())
        amphora_id, report = from_payload(envelope.payload)
        assert amphora_id == envelope.sender == "amp-svc"
        assert report.loadbalancer_id == "lb-svc" and LISTENER in report.listeners

        client.delete_amphora("amp-svc")
        assert client.get_amphora("amp-svc") is None
    with pytest.raises(OSError):
        http_get(vip, port)
