"""The renewal schedule, with the time passed in: renewed at two thirds of a lifetime,
not before; the renewal round renews the controller's certificate and an agent's (a real
HTTPS agent API on 127.0.0.1, over mutual TLS) once they are due, and only then."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from fastapi import FastAPI

from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.certs.renewal import RENEW_AFTER, RenewalLoop, renewal_due, renewal_time
from lbaas.fleet.agent_app import state_wire_version
from lbaas.fleet.agent_certs import AgentCertificates, serve_certificates
from lbaas.fleet.client_pool import tls_client_factory
from lbaas.fleet.enrolment import identity_names
from lbaas.fleet.server import AgentHttpsServer
from lbaas.health.certificates import CONTROLLER, FleetCertificates, FleetHost
from lbaas.model.fleet import HostAddress

DAY = datetime.timedelta(days=1)
T0 = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


def _serial(path: Path) -> int:
    return x509.load_pem_x509_certificate(path.read_bytes()).serial_number


def test_due_at_two_thirds_of_the_lifetime(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "pki")
    cert = ca.issue("x", "client", validity_days=300, now=T0).certificate
    assert cert.not_valid_before_utc == T0 - datetime.timedelta(minutes=5)
    at = renewal_time(cert)
    assert abs((at - cert.not_valid_before_utc) / (300 * DAY + datetime.timedelta(minutes=5))
               - RENEW_AFTER) < 1e-6  # fmt: skip
    assert not renewal_due(cert, at - datetime.timedelta(seconds=1))
    assert renewal_due(cert, at)


def test_ensure_identity_renews_only_once_due(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "pki")
    files = ca.ensure_identity(tmp_path / "id", "controller", "client", now=T0)
    first = _serial(files.cert)
    ca.ensure_identity(tmp_path / "id", "controller", "client", now=T0 + 240 * DAY)
    assert _serial(files.cert) == first  # 240 of 365 days: not yet
    ca.ensure_identity(tmp_path / "id", "controller", "client", now=T0 + 244 * DAY)
    renewed = _serial(files.cert)
    assert renewed != first
    # The new one counts from when it was issued.
    ca.ensure_identity(tmp_path / "id", "controller", "client", now=T0 + 300 * DAY)
    assert _serial(files.cert) == renewed


def test_the_loop_passes_its_clock_and_survives_a_failing_check() -> None:
    seen: list[datetime.datetime] = []

    def failing(now: datetime.datetime) -> None:
        raise RuntimeError("an agent away")

    loop = RenewalLoop([failing, seen.append], interval=3600, clock=lambda: T0)
    assert loop.run_once() == 1
    assert seen == [T0]


HOST = HostAddress("host-7", "127.0.0.1", 0)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[tuple[AgentHttpsServer, TlsFiles]]:
    """An agent's certificate routes over mutual TLS, its certificate issued long ago."""
    ca = CertificateAuthority.load_or_create(tmp_path / "pki")
    ips, dns = identity_names(HOST.host_id, HOST.address)
    issued = ca.issue(HOST.host_id, "server", ip_addresses=ips, dns_names=dns,
                      now=datetime.datetime.now(datetime.UTC) - 250 * DAY)  # fmt: skip
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    files = TlsFiles(bundle / "agent.pem", bundle / "agent.key", bundle / "ca.pem")
    files.cert.write_bytes(issued.cert_pem)
    files.key.write_bytes(issued.key_pem)
    files.ca.write_bytes(ca.ca_file.read_bytes())
    app = FastAPI()
    serve_certificates(app, AgentCertificates(files, self_renewing=False))
    state_wire_version(app)  # a real agent states it (agent_app): it has these routes
    server = AgentHttpsServer(app, "127.0.0.1", 0, files)
    server.start()
    yield server, files
    server.stop()


def test_a_round_renews_a_due_agent_and_controller_certificate_and_nothing_else(
    tmp_path: Path, agent: tuple[AgentHttpsServer, TlsFiles]
) -> None:
    server, files = agent
    pki = tmp_path / "pki"
    ca = CertificateAuthority.load_or_create(pki)
    now = datetime.datetime.now(datetime.UTC)
    controller = ca.ensure_identity(pki / CONTROLLER, CONTROLLER, "client", now=now - 250 * DAY)
    old_agent, old_controller = _serial(files.cert), _serial(controller.cert)
    where = HostAddress(HOST.host_id, HOST.address, server.port)
    fleet = FleetCertificates(
        pki, lambda: [FleetHost(where, up=True)], tls_client_factory(controller, timeout=10)
    )
    assert fleet.renew_due(now) == ["host-7"]
    renewed_agent, renewed_controller = _serial(files.cert), _serial(controller.cert)
    assert renewed_agent != old_agent and renewed_controller != old_controller
    fresh = x509.load_pem_x509_certificate(files.cert.read_bytes())
    assert ca.issued_this(fresh)
    assert fresh.not_valid_before_utc > now - datetime.timedelta(minutes=6)
    assert fleet.seen["host-7"] == fresh.not_valid_after_utc
    # The next round (the same running server: the new certificate served) has nothing due.
    assert fleet.renew_due(now + DAY) == []
    assert (_serial(files.cert), _serial(controller.cert)) == (renewed_agent, renewed_controller)
