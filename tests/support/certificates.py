"""Test PKI made with ``cryptography``: a CA, server and client certificates, CRLs, PKCS#12."""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from lbaas.certs.authority import CA_CERT_FILE, CA_KEY_FILE

_NOW = dt.datetime.now(dt.UTC)


@dataclass
class Issued:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self, passphrase: bytes | None = None) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(passphrase)
            if passphrase
            else serialization.NoEncryption()
        )
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )

    def pkcs12(
        self, password: bytes | None = None, chain: list[x509.Certificate] | None = None
    ) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password)
            if password
            else serialization.NoEncryption()
        )
        return pkcs12.serialize_key_and_certificates(
            b"lb", self.key, self.certificate, chain, encryption
        )


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn: str = "Test CA") -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_NOW - dt.timedelta(days=1))
        .not_valid_after(_NOW + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Issued(cert, key)


def issue(
    ca: Issued, cn: str, dns: tuple[str, ...] = (), *, client: bool = False, days: int = 20
) -> Issued:
    """A certificate from ``ca``, valid from a day ago for ``days`` more days."""
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_NOW - dt.timedelta(days=1))
        .not_valid_after(_NOW + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if dns:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False
        )
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


def crl(ca: Issued, revoked: list[x509.Certificate]) -> bytes:
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca.certificate.subject)
        .last_update(_NOW - dt.timedelta(hours=1))
        .next_update(_NOW + dt.timedelta(days=7))
    )
    for cert in revoked:
        builder = builder.add_revoked_certificate(
            x509.RevokedCertificateBuilder()
            .serial_number(cert.serial_number)
            .revocation_date(_NOW - dt.timedelta(minutes=5))
            .build()
        )
    return builder.sign(ca.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def state_dir_sharing_ca(root: Path, name: str) -> Path:
    """``root/name``, a process's state directory holding (in ``pki/``) the CA that
    ``root/ca`` holds, so that processes started from it trust one another."""
    directory = root / name
    (directory / "pki").mkdir(parents=True, exist_ok=True)
    for file in (CA_CERT_FILE, CA_KEY_FILE):
        shutil.copy2(root / "ca" / file, directory / "pki" / file)
    return directory
