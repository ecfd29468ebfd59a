"""The agent's certificate and trust bundle, replaced while it runs (``lbaas.wire.certificates``).

The files are the ones the HTTPS server was started with (``TlsFiles``: an enrolment
bundle's ``agent.pem``/``agent.key``/``ca.pem``, or the state directory's); replacing them
is all it takes, since the server's context is rebuilt from them for each new connection
(``lbaas.certs.reloading``). A new key is made here, kept in memory until its certificate
comes back (the last few: two health managers renewing at once both succeed), and written before the certificate (both renamed into place). Anything that
would leave the agent unreachable is refused with 400: a certificate for another key, or
from a CA it does not trust; a trust bundle under which its own certificate is foreign.
"""

from __future__ import annotations

import threading

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from fastapi import FastAPI

from lbaas.certs.authority import TlsFiles, write_private, write_public
from lbaas.errors import InvalidInput
from lbaas.wire.amphora import API_PREFIX
from lbaas.wire.certificates import (
    CERTIFICATE_PATH,
    SIGNING_REQUEST_PATH,
    TRUST_PATH,
    CertificateState,
    NewCertificate,
    SigningRequest,
    TrustBundle,
)

MAX_PENDING = 4


def _spki(key: CertificatePublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _issued_by_one(certificate: x509.Certificate, authorities: list[x509.Certificate]) -> bool:
    for authority in authorities:
        try:
            certificate.verify_directly_issued_by(authority)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return True
    return False


def _certificates(pem: str, what: str) -> list[x509.Certificate]:
    try:
        found = x509.load_pem_x509_certificates(pem.encode())
    except ValueError as exc:
        raise InvalidInput(f"the {what} is not PEM certificates") from exc
    return found


class AgentCertificates:
    """The identity of this agent's HTTPS API, and its replacement."""

    def __init__(self, files: TlsFiles, *, self_renewing: bool) -> None:
        self.files = files
        self.self_renewing = self_renewing
        self._pending: dict[bytes, ec.EllipticCurvePrivateKey] = {}
        self._lock = threading.Lock()

    def state(self) -> CertificateState:
        return CertificateState(
            certificate=self.files.cert.read_text(),
            trust=self.files.ca.read_text(),
            self_renewing=self.self_renewing,
        )

    def signing_request(self) -> SigningRequest:
        """A request for a new key; the key waits here for its certificate."""
        key = ec.generate_private_key(ec.SECP256R1())
        current = x509.load_pem_x509_certificate(self.files.cert.read_bytes())
        csr = (
            x509.CertificateSigningRequestBuilder()
            .subject_name(current.subject)
            .sign(key, hashes.SHA256())
        )
        with self._lock:
            self._pending[_spki(key.public_key())] = key
            while len(self._pending) > MAX_PENDING:
                del self._pending[next(iter(self._pending))]
        return SigningRequest(csr=csr.public_bytes(serialization.Encoding.PEM).decode())

    def install(self, body: NewCertificate) -> CertificateState:
        """Present the certificate of the pending key from now on."""
        certificate = _certificates(body.certificate, "certificate")[0]
        with self._lock:
            key = self._pending.pop(_spki(certificate.public_key()), None)
            if key is None:
                raise InvalidInput("the certificate is not for a key this agent requested")
            trust = x509.load_pem_x509_certificates(self.files.ca.read_bytes())
            if not _issued_by_one(certificate, trust):
                raise InvalidInput("no CA this agent trusts issued the certificate")
            key_pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            write_private(self.files.key, key_pem)
            write_public(self.files.cert, certificate.public_bytes(serialization.Encoding.PEM))
        return self.state()

    def trust(self, body: TrustBundle) -> CertificateState:
        """Take client certificates of exactly these CAs from now on."""
        authorities = _certificates(body.ca_bundle, "trust bundle")
        for authority in authorities:
            try:
                constraints = authority.extensions.get_extension_for_class(
                    x509.BasicConstraints
                ).value
            except x509.ExtensionNotFound:
                constraints = None
            if constraints is None or not constraints.ca:
                raise InvalidInput("every certificate of a trust bundle must be a CA")
        with self._lock:
            own = x509.load_pem_x509_certificate(self.files.cert.read_bytes())
            if not _issued_by_one(own, authorities):
                raise InvalidInput("the agent's own certificate is from none of these CAs")
            pem = b"".join(a.public_bytes(serialization.Encoding.PEM) for a in authorities)
            write_public(self.files.ca, pem)
        return self.state()


def serve_certificates(app: FastAPI, certificates: AgentCertificates) -> None:
    """The certificate routes (plain functions: FastAPI runs them in its thread pool)."""

    @app.get(f"{API_PREFIX}{CERTIFICATE_PATH}", response_model=CertificateState)
    def get_certificate() -> CertificateState:
        return certificates.state()

    @app.post(f"{API_PREFIX}{SIGNING_REQUEST_PATH}", response_model=SigningRequest)
    def request_certificate() -> SigningRequest:
        return certificates.signing_request()

    @app.put(f"{API_PREFIX}{CERTIFICATE_PATH}", response_model=CertificateState)
    def put_certificate(body: NewCertificate) -> CertificateState:
        return certificates.install(body)

    @app.put(f"{API_PREFIX}{TRUST_PATH}", response_model=CertificateState)
    def put_trust(body: TrustBundle) -> CertificateState:
        return certificates.trust(body)
