"""A small local certificate authority: one key and self-signed certificate in a directory.

The controller and every agent must prove who they are to each other, and an operator of the
embedded mode should not have to run a PKI for that. So the first process that needs the CA
creates it under ``<state_dir>/pki`` (under a file lock, as the API process and the agent may
start together) and every later one loads it. Certificates it issues carry the extended key
usage of their role (server or client), so a stolen agent certificate cannot act as the
controller's client certificate. Keys are ECDSA P-256: small, fast, and accepted by every
TLS stack lbaas talks to. Private keys are written with mode 0600 and renamed into place,
so a reader never sees half a key.

What peers trust is ``trust.pem``, not ``ca.pem``: normally the same one certificate, but
while the CA is rotated (``lbaas.certs.rotation``) it holds the old CA and the new one, so
certificates of either are accepted until every one is reissued. A certificate is renewed
once two thirds of its lifetime have passed (``lbaas.certs.renewal``).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import ipaddress
import os
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from lbaas.certs.renewal import renewal_due
from lbaas.errors import ConfigError

CA_CERT_FILE = "ca.pem"
CA_KEY_FILE = "ca.key"
TRUST_FILE = "trust.pem"
_LOCK_FILE = ".lock"
CertKind = Literal["server", "client"]


@dataclass(frozen=True)
class TlsFiles:
    """Where one TLS identity lives on disk: its certificate, its key and the CA to trust."""

    cert: Path
    key: Path
    ca: Path


@dataclass(frozen=True)
class IssuedCertificate:
    """A freshly issued certificate and its private key, both PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


class CertificateAuthority:
    """Issues server and client certificates signed by the key kept in ``directory``."""

    def __init__(
        self, directory: Path, certificate: x509.Certificate, key: ec.EllipticCurvePrivateKey
    ) -> None:
        self.directory = directory
        self.certificate = certificate
        self._key = key

    @property
    def ca_file(self) -> Path:
        """The trust bundle (public) that peers load as their only trust anchors: this CA,
        and during a rotation the other one too."""
        return self.directory / TRUST_FILE

    @classmethod
    def load_or_create(
        cls, directory: Path, *, common_name: str = "lbaas local CA", validity_days: int = 3650
    ) -> CertificateAuthority:
        """Load the CA from ``directory``, creating key and certificate on first use."""
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with _locked(directory / _LOCK_FILE):
            cert_path, key_path = directory / CA_CERT_FILE, directory / CA_KEY_FILE
            if cert_path.exists() and key_path.exists():
                loaded = cls(directory, *_load_pair(cert_path, key_path))
                if not (directory / TRUST_FILE).exists():  # a CA from before trust.pem
                    write_public(directory / TRUST_FILE, cert_path.read_bytes())
                return loaded
            if cert_path.exists() or key_path.exists():
                raise ConfigError(
                    f"incomplete CA in {directory}: need both {CA_CERT_FILE} and {CA_KEY_FILE}"
                )
            key = ec.generate_private_key(ec.SECP256R1())
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
            now = _now()
            cert = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=validity_days))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(
                    x509.KeyUsage(
                        digital_signature=False,
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
                .add_extension(
                    x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
                )
                .sign(key, hashes.SHA256())
            )
            write_private(key_path, _key_pem(key))
            write_public(cert_path, cert.public_bytes(serialization.Encoding.PEM))
            write_public(directory / TRUST_FILE, cert.public_bytes(serialization.Encoding.PEM))
            return cls(directory, cert, key)

    def issue(
        self,
        common_name: str,
        kind: CertKind,
        *,
        ip_addresses: Iterable[str] = (),
        dns_names: Iterable[str] = (),
        validity_days: int = 365,
        now: datetime.datetime | None = None,
    ) -> IssuedCertificate:
        """Sign a new key pair for ``common_name`` as a TLS server or client certificate."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self.sign(
            key.public_key(),
            common_name,
            kind,
            ip_addresses=ip_addresses,
            dns_names=dns_names,
            validity_days=validity_days,
            now=now,
        )
        return IssuedCertificate(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def sign(
        self,
        public_key: CertificatePublicKeyTypes,
        common_name: str,
        kind: CertKind,
        *,
        ip_addresses: Iterable[str] = (),
        dns_names: Iterable[str] = (),
        validity_days: int = 365,
        now: datetime.datetime | None = None,
    ) -> x509.Certificate:
        """A certificate for a key held elsewhere (an agent's, from its signing request),
        valid from ``now`` (default: the clock's)."""
        now = now or _now()
        usage = {
            "server": ExtendedKeyUsageOID.SERVER_AUTH,
            "client": ExtendedKeyUsageOID.CLIENT_AUTH,
        }[kind]
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.certificate.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=validity_days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
        )
        names = _subject_alternative_names(ip_addresses, dns_names)
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(self._key, hashes.SHA256())

    def issued_this(self, certificate: x509.Certificate) -> bool:
        """Whether ``certificate`` carries a valid signature of this CA."""
        try:
            certificate.verify_directly_issued_by(self.certificate)
        except (ValueError, TypeError, InvalidSignature):
            return False
        return True

    def ensure_identity(
        self,
        directory: Path,
        name: str,
        kind: CertKind,
        *,
        ip_addresses: Iterable[str] = (),
        dns_names: Iterable[str] = (),
        now: datetime.datetime | None = None,
    ) -> TlsFiles:
        """Files of the identity ``name``, (re)issued if missing, due, foreign or stale.

        Idempotent: an existing certificate from this CA with the same names that has not
        lived two thirds of its lifetime (at ``now``, default the clock's) is kept as it is.
        """
        ips, dns = sorted(set(ip_addresses)), sorted(set(dns_names))
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        files = TlsFiles(directory / f"{name}.pem", directory / f"{name}.key", self.ca_file)
        with _locked(directory / f".{name}.lock"):
            if not self._still_good(files, ips, dns, now or _now()):
                issued = self.issue(name, kind, ip_addresses=ips, dns_names=dns, now=now)
                write_private(files.key, issued.key_pem)
                write_public(files.cert, issued.cert_pem)
        return files

    def _still_good(
        self, files: TlsFiles, ips: list[str], dns: list[str], now: datetime.datetime
    ) -> bool:
        try:
            cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
            if not files.key.exists():
                return False
        except (OSError, ValueError):
            return False
        if not self.issued_this(cert):
            return False
        if renewal_due(cert, now):
            return False
        wanted = _subject_alternative_names(ips, dns)
        try:
            present = list(
                cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            )
        except x509.ExtensionNotFound:
            present = []
        return sorted(map(str, present)) == sorted(map(str, wanted))


def certificate_expiry(path: Path) -> float | None:
    """When the PEM certificate at ``path`` stops being valid (epoch seconds); None if it
    cannot be read."""
    try:
        certificate = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return None
    return certificate.not_valid_after_utc.timestamp()


def write_private(path: Path, data: bytes) -> None:
    """Write a secret: created 0600 under a temporary name, then renamed into place."""
    _write_atomically(path, data, 0o600)


def write_public(path: Path, data: bytes) -> None:
    """Write a certificate (public data), readable by others, atomically."""
    _write_atomically(path, data, 0o644)


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def ca_lock(directory: Path) -> contextlib.AbstractContextManager[None]:
    """The lock ``load_or_create`` takes on a CA directory: held while the CA's files are
    replaced (``lbaas.certs.rotation``), so no process loads a key of one CA with the
    certificate of the other."""
    return _locked(directory / _LOCK_FILE)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _load_pair(
    cert_path: Path, key_path: Path
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load CA from {cert_path.parent}: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ConfigError(f"CA key {key_path} is not an EC key")
    return cert, key


def _subject_alternative_names(
    ip_addresses: Iterable[str], dns_names: Iterable[str]
) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    return names


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
