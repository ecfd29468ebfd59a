"""A running HTTPS server (the agent's uvicorn) and an httpx client pick up renewed
certificates and a rotated CA for their next connection, without a restart."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from fastapi import FastAPI

from lbaas.certs import rotation
from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.certs.reloading import ReloadingContext
from lbaas.certs.tlsconfig import client_context
from lbaas.fleet.server import AgentHttpsServer


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    CertificateAuthority.load_or_create(tmp_path / "pki")
    return tmp_path / "pki"


def _server_identity(pki: Path) -> TlsFiles:
    ca = CertificateAuthority.load_or_create(pki)
    return ca.ensure_identity(pki / "agent", "agent", "server", ip_addresses=["127.0.0.1"])


def _client_identity(pki: Path, where: Path) -> TlsFiles:
    ca = CertificateAuthority.load_or_create(pki)
    return ca.ensure_identity(where, "controller", "client")


@pytest.fixture
def server(pki: Path) -> Iterator[AgentHttpsServer]:
    app = FastAPI()

    @app.get("/ping")
    def ping() -> dict[str, str]:
        return {"pong": "yes"}

    running = AgentHttpsServer(app, "127.0.0.1", 0, _server_identity(pki))
    running.start()
    yield running
    running.stop()


def _served_serial(server: AgentHttpsServer, context: ssl.SSLContext) -> int:
    """One request on a new connection; the serial of the certificate the server showed."""
    with httpx.Client(verify=context, timeout=10) as client:
        response = client.get(f"https://127.0.0.1:{server.port}/ping")
        assert response.json() == {"pong": "yes"}
        tls = response.extensions["network_stream"].get_extra_info("ssl_object")
        der = tls.getpeercert(True)
    return x509.load_der_x509_certificate(der).serial_number


def test_a_renewed_server_certificate_reaches_the_next_connection(
    pki: Path, server: AgentHttpsServer, tmp_path: Path
) -> None:
    client = ReloadingContext(_client_identity(pki, tmp_path / "ctl"), client_context)
    first = _served_serial(server, client)
    assert _served_serial(server, client) == first  # nothing changed: same certificate
    files = _server_identity(pki)
    x509.load_pem_x509_certificate(files.cert.read_bytes())
    ca = CertificateAuthority.load_or_create(pki)
    issued = ca.issue("agent", "server", ip_addresses=["127.0.0.1"])
    files.key.write_bytes(issued.key_pem)
    files.cert.write_bytes(issued.cert_pem)
    renewed = _served_serial(server, client)
    assert renewed != first
    assert renewed == issued.certificate.serial_number


def test_a_half_written_identity_keeps_the_previous_one(
    pki: Path, server: AgentHttpsServer, tmp_path: Path
) -> None:
    client = ReloadingContext(_client_identity(pki, tmp_path / "ctl"), client_context)
    first = _served_serial(server, client)
    files = _server_identity(pki)
    other = CertificateAuthority.load_or_create(pki).issue(
        "agent", "server", ip_addresses=["127.0.0.1"]
    )
    files.key.write_bytes(other.key_pem)  # the new key, the old certificate still there
    assert _served_serial(server, client) == first
    assert _served_serial(server, client) == first  # not tried again: nothing changed
    files.cert.write_bytes(other.cert_pem)  # its certificate lands: taken at once
    assert _served_serial(server, client) == other.certificate.serial_number


def test_the_ca_rotates_under_a_running_server_and_client(
    pki: Path, server: AgentHttpsServer, tmp_path: Path
) -> None:
    controller = _client_identity(pki, tmp_path / "ctl")
    client = ReloadingContext(controller, client_context)
    old_serial = _served_serial(server, client)
    kept = TlsFiles(tmp_path / "old.pem", tmp_path / "old.key", tmp_path / "both.pem")
    kept.cert.write_bytes(controller.cert.read_bytes())  # the old CA's, kept aside
    kept.key.write_bytes(controller.key.read_bytes())

    rotation.begin_trust(pki, common_name="lbaas test CA 2")
    assert len(rotation.trusted(pki)) == 2
    kept.ca.write_bytes(controller.ca.read_bytes())
    old_client = client_context(kept)
    assert _served_serial(server, client) == old_serial  # still the old CA signing
    rotation.switch_signer(pki)
    new_server = _server_identity(pki)  # reissued: the signer changed
    _client_identity(pki, tmp_path / "ctl")
    assert _served_serial(server, client) != old_serial
    # Both CAs still trusted: a client with the old CA's certificate still gets in.
    _served_serial(server, old_client)

    rotation.retire(pki)
    assert len(rotation.trusted(pki)) == 1
    assert (
        _served_serial(server, client)
        == x509.load_pem_x509_certificate(new_server.cert.read_bytes()).serial_number
    )
    with pytest.raises(httpx.HTTPError):  # the retired CA's certificate is refused now
        _served_serial(server, old_client)
