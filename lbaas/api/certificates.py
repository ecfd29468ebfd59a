"""The key-manager step of listener and pool validation: every reference must resolve.

Octavia fetches each certificate reference a request carries from its key manager, as the
caller, before accepting the object. Here the references are resolved (``lbaas.keyrefs``)
in lbaas's own key manager, or in the operator's Barbican for references under its
endpoints, within the load balancer's project: a reference to another project's
container, a missing one, one whose key does not match its certificate, or unreadable
material all fail with Octavia's 400 ``Could not retrieve certificate: [...]`` (the reason
is added; material never is). Without a key manager every other reference fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lbaas.api.services import ApiServices
from lbaas.errors import InvalidInput
from lbaas.keyrefs import certificates as certificate_refs
from lbaas.keyrefs.base import KeyMaterial, Unresolvable

Loader = Callable[[KeyMaterial, str, str], object]


def _require(services: ApiServices, project_id: str, refs: Sequence[str], load: Loader) -> None:
    _require_each(services, project_id, [(ref, load) for ref in refs])


def _require_each(
    services: ApiServices, project_id: str, wanted: Sequence[tuple[str, Loader]]
) -> None:
    if not wanted:
        return
    material = services.key_material
    failed: list[str] = []
    reasons: list[str] = []
    for ref, load in wanted:
        try:
            load(material, project_id, ref)
        except Unresolvable as exc:
            failed.append(ref)
            reasons.append(str(exc))
    if failed:
        # Octavia's message lists every reference that failed; the reasons follow it.
        raise InvalidInput(f"Could not retrieve certificate: {failed} ({'; '.join(reasons)})")


def require_certificates(
    services: ApiServices,
    project_id: str,
    tls_refs: Sequence[str],
    ca_ref: str | None,
    crl_ref: str | None,
) -> None:
    """Server (or client) certificates, then the CA bundle, then the revocation list."""
    _require(services, project_id, tls_refs, certificate_refs.server_certificate)
    _require(services, project_id, [r for r in (ca_ref,) if r], certificate_refs.ca_bundle)
    _require(services, project_id, [r for r in (crl_ref,) if r], certificate_refs.revocation_list)


def require_pool_certificates(
    services: ApiServices,
    project_id: str,
    tls_ref: str | None,
    ca_ref: str | None,
    crl_ref: str | None,
) -> None:
    """A pool's client certificate, CA and CRL; one 400 listing every one that failed."""
    wanted: list[tuple[str, Loader]] = []
    if tls_ref:
        wanted.append((tls_ref, certificate_refs.server_certificate))
    if ca_ref:
        wanted.append((ca_ref, certificate_refs.ca_bundle))
    if crl_ref:
        wanted.append((crl_ref, certificate_refs.revocation_list))
    _require_each(services, project_id, wanted)
