"""The local CA: created once, loaded afterwards, issuing certificates with the right names."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from lbaas.certs.authority import CA_KEY_FILE, CertificateAuthority


def test_created_once_then_loaded(tmp_path: Path) -> None:
    first = CertificateAuthority.load_or_create(tmp_path / "pki")
    second = CertificateAuthority.load_or_create(tmp_path / "pki")
    assert first.certificate == second.certificate
    key_mode = stat.S_IMODE((tmp_path / "pki" / CA_KEY_FILE).stat().st_mode)
    assert key_mode == 0o600
    constraints = first.certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.value.ca


def test_server_certificate_names_and_usage(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path)
    issued = ca.issue("agent", "server", ip_addresses=["127.0.0.1"], dns_names=["localhost"])
    cert = issued.certificate
    assert ca.issued_this(cert)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_client_certificate_usage(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path)
    cert = ca.issue("controller", "client").certificate
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_foreign_certificate_is_not_ours(tmp_path: Path) -> None:
    ours = CertificateAuthority.load_or_create(tmp_path / "a")
    theirs = CertificateAuthority.load_or_create(tmp_path / "b")
    assert not ours.issued_this(theirs.issue("x", "client").certificate)


def test_ensure_identity_is_idempotent_and_follows_names(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "pki")
    files = ca.ensure_identity(tmp_path / "id", "agent", "server", ip_addresses=["127.0.0.1"])
    pem = files.cert.read_bytes()
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    again = ca.ensure_identity(tmp_path / "id", "agent", "server", ip_addresses=["127.0.0.1"])
    assert again == files and files.cert.read_bytes() == pem
    ca.ensure_identity(tmp_path / "id", "agent", "server", ip_addresses=["127.0.0.2"])
    assert files.cert.read_bytes() != pem


def test_identity_from_another_ca_is_replaced(tmp_path: Path) -> None:
    old = CertificateAuthority.load_or_create(tmp_path / "old")
    files = old.ensure_identity(tmp_path / "id", "agent", "server")
    new = CertificateAuthority.load_or_create(tmp_path / "new")
    replaced = new.ensure_identity(tmp_path / "id", "agent", "server")
    cert = x509.load_pem_x509_certificate(replaced.cert.read_bytes())
    assert new.issued_this(cert) and replaced.ca == new.ca_file
    assert files.cert == replaced.cert
