"""The CA directory's rotation steps, and a rotation that meets an agent it cannot reach:
it stops before the new CA signs anything, with both CAs trusted, and goes on when run
again once the agent is back (a real agent API on 127.0.0.1 over mutual TLS)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from cryptography import x509
from fastapi import FastAPI

from lbaas.certs import rotation
from lbaas.certs.authority import CA_CERT_FILE, CertificateAuthority, TlsFiles
from lbaas.errors import CommandRefused, ConfigError
from lbaas.fleet.agent_app import state_wire_version
from lbaas.fleet.agent_certs import AgentCertificates, serve_certificates
from lbaas.fleet.client_pool import tls_client_factory
from lbaas.fleet.enrolment import identity_names
from lbaas.fleet.server import AgentHttpsServer
from lbaas.health.certificates import CONTROLLER, FleetCertificates, FleetHost
from lbaas.model.fleet import HostAddress


def test_the_steps_go_in_order_and_repeat_harmlessly(tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    old = CertificateAuthority.load_or_create(pki).certificate
    with pytest.raises(ConfigError):
        rotation.switch_signer(pki)  # nothing begun
    following = rotation.begin_trust(pki, "second")
    assert rotation.begin_trust(pki).certificate == following.certificate  # the same one
    assert rotation.phase(pki) == "trusting"
    assert rotation.trusted(pki) == [old, following.certificate]
    with pytest.raises(ConfigError):
        rotation.retire(pki)  # the new CA does not sign yet
    assert rotation.switch_signer(pki).certificate == following.certificate
    assert rotation.switch_signer(pki).certificate == following.certificate
    assert rotation.phase(pki) == "issuing"
    assert rotation.trusted(pki) == [old, following.certificate]
    assert rotation.retire(pki).certificate == following.certificate
    assert rotation.phase(pki) == "none"
    assert rotation.trusted(pki) == [following.certificate]


def _agent(ca: CertificateAuthority, directory: Path, host_id: str) -> AgentHttpsServer:
    ips, dns = identity_names(host_id, "127.0.0.1")
    issued = ca.issue(host_id, "server", ip_addresses=ips, dns_names=dns)
    directory.mkdir()
    files = TlsFiles(directory / "agent.pem", directory / "agent.key", directory / "ca.pem")
    files.cert.write_bytes(issued.cert_pem)
    files.key.write_bytes(issued.key_pem)
    files.ca.write_bytes(ca.ca_file.read_bytes())
    app = FastAPI()
    serve_certificates(app, AgentCertificates(files, self_renewing=False))
    state_wire_version(app)  # a real agent states it (agent_app): it has these routes
    server = AgentHttpsServer(app, "127.0.0.1", 0, files)
    server.start()
    return server


def test_an_unreachable_agent_stops_the_rotation_before_the_new_ca_signs(tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    ca = CertificateAuthority.load_or_create(pki)
    controller = ca.ensure_identity(pki / CONTROLLER, CONTROLLER, "client")
    server = _agent(ca, tmp_path / "up", "host-1")
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        silent_port = unused.getsockname()[1]  # nothing listens there once closed
    hosts = [
        FleetHost(HostAddress("host-1", "127.0.0.1", server.port), up=True),
        FleetHost(HostAddress("host-2", "127.0.0.1", silent_port), up=False),
    ]
    fleet = FleetCertificates(pki, lambda: hosts, tls_client_factory(controller, timeout=5))
    try:
        with pytest.raises(CommandRefused, match="no CA rotation"):
            fleet.finish_rotation()
        with pytest.raises(CommandRefused, match="host-2"):
            fleet.begin_rotation()
        assert rotation.phase(pki) == "trusting"  # both trusted; the old CA still signs
        assert CertificateAuthority.load_or_create(pki).certificate == ca.certificate
        assert ca.issued_this(x509.load_pem_x509_certificate(controller.cert.read_bytes()))
        # The host is gone for good: left out, the command is run again and goes on.
        assert fleet.begin_rotation(skip=frozenset({"host-2"})) == ["host-1"]
        del hosts[1]
        signer = CertificateAuthority.load_or_create(pki)
        assert signer.certificate != ca.certificate
        assert (pki / "retiring" / CA_CERT_FILE).exists()
        assert fleet.finish_rotation() == ["host-1"]
        assert rotation.trusted(pki) == [signer.certificate]
        assert [e.role for e in fleet.expiries()] == ["ca", "controller", "agent"]
    finally:
        server.stop()
