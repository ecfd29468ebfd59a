"""Certificate references (Octavia's ``*_container_ref`` fields) resolved in the vault.

A reference is the URL the key manager returned: ``…/v1/containers/<uuid>`` (a certificate
container) or ``…/v1/secrets/<uuid>`` (a PKCS#12 bundle, or a PEM CA bundle / CRL). Only
the last two path segments count, so a reference keeps working when the API is reached
under another host name; it must belong to the given project, else it does not resolve.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from cryptography import x509

from lbaas.certs import tls_material
from lbaas.certs.tls_material import MaterialError, ServerCertificate
from lbaas.db.secret_vault import SecretVault
from lbaas.errors import NotFound

CONTAINERS = "containers"
SECRETS = "secrets"


@dataclass(frozen=True)
class Ref:
    kind: str  # CONTAINERS or SECRETS
    id: str


def parse_ref(ref: str) -> Ref | None:
    parts = ref.rstrip("/").split("?", 1)[0].rsplit("/", 2)
    if len(parts) < 2 or parts[-2] not in (CONTAINERS, SECRETS):
        return None
    try:
        ident = str(uuid.UUID(parts[-1]))
    except ValueError:
        return None
    return Ref(parts[-2], ident)


class Unresolvable(Exception):
    """A reference that does not lead to usable material (the reason, never the bytes)."""


def _ref(ref: str) -> Ref:
    parsed = parse_ref(ref)
    if parsed is None:
        raise Unresolvable("not a key-manager secret or container reference")
    return parsed


def _members(vault: SecretVault, project_id: str, container_id: str) -> dict[str, bytes]:
    view = vault.get_container(project_id, container_id)
    return {name: vault.payload(project_id, secret_id)[0] for name, secret_id in view.secrets}


def server_certificate(vault: SecretVault, project_id: str, ref: str) -> ServerCertificate:
    """A certificate container, or a PKCS#12 secret, as a checked server certificate."""
    target = _ref(ref)
    try:
        if target.kind == SECRETS:
            return tls_material.from_pkcs12(vault.payload(project_id, target.id)[0])
        parts = _members(vault, project_id, target.id)
        if "certificate" not in parts:
            raise Unresolvable("the container has no certificate")
        return tls_material.from_parts(
            parts["certificate"],
            parts.get("private_key"),
            parts.get("intermediates"),
            parts.get("private_key_passphrase"),
        )
    except (NotFound, MaterialError) as exc:
        raise Unresolvable(str(exc)) from exc


def _pem_of(vault: SecretVault, project_id: str, ref: str) -> bytes:
    target = _ref(ref)
    try:
        if target.kind == SECRETS:
            return vault.payload(project_id, target.id)[0]
        parts = _members(vault, project_id, target.id)
    except NotFound as exc:
        raise Unresolvable(str(exc)) from exc
    if "certificate" not in parts:
        raise Unresolvable("the container has no certificate")
    return parts["certificate"]


def ca_bundle(vault: SecretVault, project_id: str, ref: str) -> list[x509.Certificate]:
    """The CA certificates of a secret (or a container's certificate)."""
    try:
        return tls_material.load_certificates(_pem_of(vault, project_id, ref))
    except MaterialError as exc:
        raise Unresolvable(str(exc)) from exc


def revocation_list(
    vault: SecretVault, project_id: str, ref: str
) -> x509.CertificateRevocationList:
    try:
        return tls_material.load_crl(_pem_of(vault, project_id, ref))
    except MaterialError as exc:
        raise Unresolvable(str(exc)) from exc
