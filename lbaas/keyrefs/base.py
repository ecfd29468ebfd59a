"""What a certificate reference is, and the interface that reads the material it names.

A reference is the URL a key manager returned: ``…/v1/containers/<uuid>`` (a certificate
container) or ``…/v1/secrets/<uuid>`` (a PKCS#12 bundle, or a PEM CA bundle or CRL). A
``KeyMaterial`` reads, for a project, a secret's payload or a container's members; what it
cannot read is ``Unresolvable`` with a reason that never carries material.
"""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

CONTAINERS = "containers"
SECRETS = "secrets"


@dataclass(frozen=True)
class Ref:
    kind: str  # CONTAINERS or SECRETS
    id: str


def parse_ref(ref: str) -> Ref | None:
    """The kind and id a reference names (only its last two path segments count)."""
    parts = urlsplit(ref).path.rstrip("/").rsplit("/", 2)
    if len(parts) < 2 or parts[-2] not in (CONTAINERS, SECRETS):
        return None
    try:
        ident = str(uuid.UUID(parts[-1]))
    except ValueError:
        return None
    return Ref(parts[-2], ident)


def ref_of(ref: str) -> Ref:
    """``parse_ref``, or ``Unresolvable`` for what is not a reference at all."""
    parsed = parse_ref(ref)
    if parsed is None:
        raise Unresolvable("not a key-manager secret or container reference")
    return parsed


class Unresolvable(Exception):
    """A reference that does not lead to usable material (the reason, never the bytes).

    ``transient``: the key manager could not be asked (unreachable, overloaded), so the
    same reference may well resolve later; a converge retries rather than fail for good.
    """

    def __init__(self, reason: str, *, transient: bool = False) -> None:
        super().__init__(reason)
        self.transient = transient


class KeyMaterial(abc.ABC):
    """Reads the payloads certificate references name, on behalf of a project."""

    @abc.abstractmethod
    def secret(self, project_id: str, ref: str) -> bytes:
        """The payload of the secret ``ref`` names."""

    @abc.abstractmethod
    def container(self, project_id: str, ref: str) -> dict[str, bytes]:
        """The payload of each secret in the container ``ref`` names, by member name."""
