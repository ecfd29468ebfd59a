"""The agent's certificate routes refuse what would cut it off: a certificate for another
key or from a CA it does not trust, a trust bundle its own certificate is not under, a
bundle holding a certificate that is no CA. Accepted ones replace the files."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from lbaas.certs.authority import CertificateAuthority
from lbaas.errors import InvalidInput
from lbaas.fleet.agent_certs import AgentCertificates
from lbaas.wire.certificates import NewCertificate, TrustBundle


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority.load_or_create(tmp_path / "pki")


@pytest.fixture
def agent(ca: CertificateAuthority, tmp_path: Path) -> AgentCertificates:
    files = ca.ensure_identity(tmp_path / "agent", "agent", "server")
    return AgentCertificates(files, self_renewing=False)


def _signed(ca: CertificateAuthority, csr_pem: str) -> str:
    csr = x509.load_pem_x509_csr(csr_pem.encode())
    cert = ca.sign(csr.public_key(), "agent", "server")
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def test_the_certificate_of_a_requested_key_is_installed(
    ca: CertificateAuthority, agent: AgentCertificates
) -> None:
    first, second = agent.signing_request(), agent.signing_request()
    # Two renewals at once: both keys wait; either certificate installs.
    state = agent.install(NewCertificate(certificate=_signed(ca, first.csr)))
    assert state.certificate == agent.files.cert.read_text()
    agent.install(NewCertificate(certificate=_signed(ca, second.csr)))
    with pytest.raises(InvalidInput, match="not for a key"):  # each key serves once
        agent.install(NewCertificate(certificate=_signed(ca, first.csr)))


def test_a_certificate_for_another_key_or_from_a_foreign_ca_is_refused(
    ca: CertificateAuthority, agent: AgentCertificates, tmp_path: Path
) -> None:
    before = agent.files.cert.read_bytes()
    stranger = ca.issue("agent", "server").cert_pem.decode()
    with pytest.raises(InvalidInput, match="not for a key"):
        agent.install(NewCertificate(certificate=stranger))
    foreign = CertificateAuthority.load_or_create(tmp_path / "foreign")
    with pytest.raises(InvalidInput, match="no CA this agent trusts"):
        agent.install(NewCertificate(certificate=_signed(foreign, agent.signing_request().csr)))
    assert agent.files.cert.read_bytes() == before


def test_a_trust_bundle_must_keep_the_agent_trusted_and_hold_only_cas(
    ca: CertificateAuthority, agent: AgentCertificates, tmp_path: Path
) -> None:
    foreign = CertificateAuthority.load_or_create(tmp_path / "foreign")
    foreign_pem = foreign.ca_file.read_text()
    with pytest.raises(InvalidInput, match="own certificate"):
        agent.trust(TrustBundle(ca_bundle=foreign_pem))
    leaf = agent.files.cert.read_text()
    with pytest.raises(InvalidInput, match="must be a CA"):
        agent.trust(TrustBundle(ca_bundle=ca.ca_file.read_text() + leaf))
    with pytest.raises(InvalidInput, match="not PEM"):
        agent.trust(TrustBundle(ca_bundle="nothing"))
    both = ca.ca_file.read_text() + foreign_pem
    assert agent.trust(TrustBundle(ca_bundle=both)).trust == both
    assert len(x509.load_pem_x509_certificates(agent.files.ca.read_bytes())) == 2
