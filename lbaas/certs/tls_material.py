"""Certificate material as a TLS terminator needs it, from what tenants store.

Tenants store a certificate, its private key (possibly encrypted with a passphrase) and
intermediates as separate secrets of a certificate container, or everything in one
PKCS#12 secret. HAProxy wants one PEM file per certificate: the certificate, the
intermediates and an unencrypted key. Everything is checked here the way Octavia checks
it before accepting a listener: the certificate parses, the key parses (with its
passphrase) and belongs to the certificate. Error messages never carry the material.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

_PEM_CERT = b"-----BEGIN CERTIFICATE-----"


class MaterialError(ValueError):
    """Stored material that cannot serve as a TLS certificate (the reason, no bytes)."""


@dataclass(frozen=True)
class ServerCertificate:
    """What one ``crt`` entry of HAProxy needs, already checked."""

    certificate: x509.Certificate
    intermediates: tuple[x509.Certificate, ...]
    private_key_pem: bytes

    def pem_bundle(self) -> bytes:
        """Certificate, intermediates, key: the order HAProxy reads a ``crt`` file in."""
        parts = [self.certificate.public_bytes(serialization.Encoding.PEM)]
        parts += [c.public_bytes(serialization.Encoding.PEM) for c in self.intermediates]
        parts.append(self.private_key_pem)
        return b"".join(parts)

    def host_names(self) -> tuple[str, ...]:
        """The DNS names of the subject alternative names, else the common name."""
        try:
            san = self.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            names = tuple(san.value.get_values_for_type(x509.DNSName))
        except x509.ExtensionNotFound:
            names = ()
        if names:
            return names
        cns = self.certificate.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        return tuple(str(a.value) for a in cns)


def load_certificates(data: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle, or the one certificate of a DER blob."""
    try:
        if _PEM_CERT in data:
            return x509.load_pem_x509_certificates(data)
        return [x509.load_der_x509_certificate(data)]
    except ValueError as exc:
        raise MaterialError("the certificate is not a valid PEM or DER X.509 certificate") from exc


def load_crl(data: bytes) -> x509.CertificateRevocationList:
    try:
        if b"-----BEGIN X509 CRL-----" in data:
            return x509.load_pem_x509_crl(data)
        return x509.load_der_x509_crl(data)
    except ValueError as exc:
        raise MaterialError("the revocation list is not a valid PEM or DER CRL") from exc


def _load_key(data: bytes, passphrase: bytes | None) -> PrivateKeyTypes:
    try:
        if b"-----BEGIN" in data:
            return serialization.load_pem_private_key(data, passphrase or None)
        return serialization.load_der_private_key(data, passphrase or None)
    except (ValueError, TypeError) as exc:
        raise MaterialError(
            "the private key cannot be read (wrong or missing passphrase, or not a key)"
        ) from exc


def _unencrypted_pem(key: PrivateKeyTypes) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _check_pair(certificate: x509.Certificate, key: PrivateKeyTypes) -> None:
    ours = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    theirs = certificate.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    if ours != theirs:
        raise MaterialError("the private key does not match the certificate")


def from_parts(
    certificate: bytes,
    private_key: bytes | None,
    intermediates: bytes | None = None,
    passphrase: bytes | None = None,
) -> ServerCertificate:
    """A certificate container's secrets as one checked server certificate."""
    if private_key is None:
        raise MaterialError("the container has no private_key")
    leaf = load_certificates(certificate)
    chain = load_certificates(intermediates) if intermediates else []
    key = _load_key(private_key, passphrase)
    _check_pair(leaf[0], key)
    # A certificate secret that carries its chain after the leaf is accepted too.
    return ServerCertificate(leaf[0], tuple(leaf[1:] + chain), _unencrypted_pem(key))


def from_pkcs12(data: bytes, passphrase: bytes | None = None) -> ServerCertificate:
    """One PKCS#12 secret (what Octavia's default certificate manager stores)."""
    try:
        key, certificate, extra = pkcs12.load_key_and_certificates(data, passphrase or None)
    except ValueError as exc:
        raise MaterialError("the PKCS#12 bundle cannot be read (or its password is wrong)") from exc
    if certificate is None or key is None:
        raise MaterialError("the PKCS#12 bundle lacks a certificate or a private key")
    _check_pair(certificate, key)
    return ServerCertificate(certificate, tuple(extra), _unencrypted_pem(key))
