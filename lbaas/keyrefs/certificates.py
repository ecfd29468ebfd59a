"""The certificates, CA bundles and revocation lists that references name, checked.

A container reference is a certificate container (certificate, private key, intermediates,
passphrase); a secret reference is a PKCS#12 bundle where a server certificate is wanted,
or PEM where a CA bundle or CRL is. Whatever the source (``KeyMaterial``), what does not
parse is ``Unresolvable`` with the parser's reason.
"""

from __future__ import annotations

import datetime as dt

from cryptography import x509

from lbaas.certs import tls_material
from lbaas.certs.tls_material import MaterialError, ServerCertificate
from lbaas.keyrefs.base import SECRETS, KeyMaterial, Unresolvable, ref_of

#: A served certificate closer than this to its notAfter is reported (converge log line,
#: ``lbaas diagnose``; the expiry metric gives the seconds for any alert threshold).
EXPIRY_WARNING = dt.timedelta(days=14)


def server_certificate(material: KeyMaterial, project_id: str, ref: str) -> ServerCertificate:
    """A certificate container, or a PKCS#12 secret, as a checked server certificate."""
    try:
        if ref_of(ref).kind == SECRETS:
            return tls_material.from_pkcs12(material.secret(project_id, ref))
        parts = material.container(project_id, ref)
        if "certificate" not in parts:
            raise Unresolvable("the container has no certificate")
        return tls_material.from_parts(
            parts["certificate"],
            parts.get("private_key"),
            parts.get("intermediates"),
            parts.get("private_key_passphrase"),
        )
    except MaterialError as exc:
        raise Unresolvable(str(exc)) from exc


def _pem_of(material: KeyMaterial, project_id: str, ref: str) -> bytes:
    if ref_of(ref).kind == SECRETS:
        return material.secret(project_id, ref)
    parts = material.container(project_id, ref)
    if "certificate" not in parts:
        raise Unresolvable("the container has no certificate")
    return parts["certificate"]


def ca_bundle(material: KeyMaterial, project_id: str, ref: str) -> list[x509.Certificate]:
    """The CA certificates of a secret (or a container's certificate)."""
    try:
        return tls_material.load_certificates(_pem_of(material, project_id, ref))
    except MaterialError as exc:
        raise Unresolvable(str(exc)) from exc


def revocation_list(
    material: KeyMaterial, project_id: str, ref: str
) -> x509.CertificateRevocationList:
    try:
        return tls_material.load_crl(_pem_of(material, project_id, ref))
    except MaterialError as exc:
        raise Unresolvable(str(exc)) from exc
