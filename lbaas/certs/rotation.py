"""The CA directory's side of a CA rotation: which CA signs, which CAs are trusted.

A rotation goes through three states of ``<state_dir>/pki``, each safe to stop in:

* ``none``: ``ca.pem``/``ca.key`` sign, ``trust.pem`` holds that one CA.
* ``trusting`` (``begin_trust``): a new CA waits in ``next/``; ``trust.pem`` holds both.
  The old CA still signs. Peers are told the new bundle before anything is signed by the
  new CA, so none meets a certificate it cannot check.
* ``issuing`` (``switch_signer``): the new CA moved to ``ca.pem``/``ca.key`` and signs;
  the old one waits in ``retiring/``; ``trust.pem`` still holds both, so certificates of
  either keep working while they are reissued.

``retire`` ends it: ``trust.pem`` holds the new CA alone and ``retiring/`` is removed.
Each step is idempotent, so a command interrupted half-way is run again. The fleet's side
(telling agents, reissuing their certificates) is ``lbaas.fleet.ca_rotation``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from lbaas.certs.authority import (
    CA_CERT_FILE,
    CA_KEY_FILE,
    TRUST_FILE,
    CertificateAuthority,
    ca_lock,
    write_private,
    write_public,
)
from lbaas.errors import ConfigError

NEXT_DIR = "next"
RETIRING_DIR = "retiring"
Phase = Literal["none", "trusting", "issuing"]


def phase(pki: Path) -> Phase:
    if (pki / NEXT_DIR / CA_CERT_FILE).exists():
        return "trusting"
    if (pki / RETIRING_DIR / CA_CERT_FILE).exists():
        return "issuing"
    return "none"


def bundle_pem(certificates: list[x509.Certificate]) -> bytes:
    """The certificates as one PEM bundle, each once, in order."""
    seen: dict[bytes, None] = {}
    for certificate in certificates:
        seen.setdefault(certificate.public_bytes(serialization.Encoding.PEM))
    return b"".join(seen)


def trusted(pki: Path) -> list[x509.Certificate]:
    """The CAs of ``trust.pem``."""
    return x509.load_pem_x509_certificates((pki / TRUST_FILE).read_bytes())


def begin_trust(pki: Path, common_name: str = "lbaas local CA") -> CertificateAuthority:
    """Make (or load) the next CA and trust it alongside the current one; returns it."""
    current = CertificateAuthority.load_or_create(pki)
    if phase(pki) == "issuing":
        raise ConfigError("the new CA already signs: finish the rotation first")
    following = CertificateAuthority.load_or_create(pki / NEXT_DIR, common_name=common_name)
    write_public(pki / TRUST_FILE, bundle_pem([current.certificate, following.certificate]))
    return following


def switch_signer(pki: Path) -> CertificateAuthority:
    """Let the next CA sign from now on (the old one kept, trusted, in ``retiring/``)."""
    if phase(pki) == "issuing":
        return CertificateAuthority.load_or_create(pki)
    if phase(pki) != "trusting":
        raise ConfigError("no CA rotation under way: begin one first")
    both = trusted(pki)
    retiring, following = pki / RETIRING_DIR, pki / NEXT_DIR
    retiring.mkdir(mode=0o700, exist_ok=True)
    with ca_lock(pki):  # key and certificate change together for every loader
        write_private(retiring / CA_KEY_FILE, (pki / CA_KEY_FILE).read_bytes())
        write_public(retiring / CA_CERT_FILE, (pki / CA_CERT_FILE).read_bytes())
        write_private(pki / CA_KEY_FILE, (following / CA_KEY_FILE).read_bytes())
        write_public(pki / CA_CERT_FILE, (following / CA_CERT_FILE).read_bytes())
        write_public(pki / TRUST_FILE, bundle_pem(both))
    shutil.rmtree(following)
    return CertificateAuthority.load_or_create(pki)


def retire(pki: Path) -> CertificateAuthority:
    """Trust the signing CA alone; the old one is forgotten."""
    current = CertificateAuthority.load_or_create(pki)
    if phase(pki) == "trusting":
        raise ConfigError("the new CA does not sign yet: run the rotation's first step again")
    write_public(pki / TRUST_FILE, bundle_pem([current.certificate]))
    shutil.rmtree(pki / RETIRING_DIR, ignore_errors=True)
    return current
