"""The TLS files of a load balancer's terminating listeners, fetched from the key manager.

For every listener that terminates TLS (TERMINATED_HTTPS, and PROMETHEUS given a
certificate) the controller opens its certificate references (in the load balancer's
project, through ``lbaas.keyrefs``: its own key manager or the operator's Barbican) and
turns them into files for the agent: one PEM bundle per certificate (certificate, chain,
unencrypted key), a ``crt-list`` naming them with the default certificate first, and the
client CA and CRL when client authentication uses them. File names are digests of their
content. A reference that no longer resolves (its secret was deleted) is a
``PermanentError``: the load balancer goes to ERROR with the reason, never with the
material. A key manager out of reach is a ``TemporaryError``: the converge is retried.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import posixpath
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization

from lbaas.errors import ConvergeError, PermanentError, TemporaryError
from lbaas.keyrefs import certificates as certificate_refs
from lbaas.keyrefs.base import KeyMaterial, Unresolvable
from lbaas.keyrefs.certificates import EXPIRY_WARNING
from lbaas.model.enums import ClientAuthentication
from lbaas.model.graph import Listener, LoadBalancer, Pool
from lbaas.render.haproxy.tls import ListenerTlsFiles, PoolTlsFiles
from lbaas.wire.amphora import TlsFile

LOG = logging.getLogger(__name__)
#: Seconds before a converge that could not reach the key manager is tried again.
_KEY_MANAGER_RETRY = 2.0


def _warn_if_expiring(listener: Listener, ref: str, not_after: dt.datetime) -> None:
    left = not_after - dt.datetime.now(dt.UTC)
    if left < EXPIRY_WARNING:
        LOG.warning(
            "listener %s: certificate %s expires %s (in %d days)",
            listener.id,
            ref,
            not_after.isoformat(),
            left.days,
        )


@dataclass
class TlsBundle:
    by_listener: dict[str, ListenerTlsFiles] = field(default_factory=dict)
    by_pool: dict[str, PoolTlsFiles] = field(default_factory=dict)
    files: dict[str, TlsFile] = field(default_factory=dict)

    def add(self, tls_dir: str, content: bytes, suffix: str = ".pem") -> str:
        name = hashlib.sha256(content).hexdigest()[:40] + suffix
        self.files[name] = TlsFile(name=name, content=content.decode("ascii"))
        return posixpath.join(tls_dir, name)


def _server_refs(listener: Listener) -> list[str]:
    refs = [listener.default_tls_container_ref, *listener.sni_container_refs]
    out: list[str] = []
    for ref in refs:
        if ref and ref not in out:
            out.append(ref)
    return out


def _listener_files(
    material: KeyMaterial, project_id: str, listener: Listener, tls_dir: str, bundle: TlsBundle
) -> ListenerTlsFiles:
    lines = []
    for ref in _server_refs(listener):
        certificate = certificate_refs.server_certificate(material, project_id, ref)
        _warn_if_expiring(listener, ref, certificate.certificate.not_valid_after_utc)
        lines.append(bundle.add(tls_dir, certificate.pem_bundle()))
    crt_list = bundle.add(tls_dir, ("\n".join(lines) + "\n").encode(), ".crt-list")
    ca_file = crl_file = None
    verifying = listener.client_authentication is not ClientAuthentication.NONE
    if verifying and listener.client_ca_tls_container_ref:
        pem = _pem_of_cas(material, project_id, listener.client_ca_tls_container_ref)
        ca_file = bundle.add(tls_dir, pem)
        if listener.client_crl_container_ref:
            crl = certificate_refs.revocation_list(
                material, project_id, listener.client_crl_container_ref
            )
            crl_file = bundle.add(tls_dir, crl.public_bytes(serialization.Encoding.PEM))
    return ListenerTlsFiles(crt_list=crt_list, ca_file=ca_file, crl_file=crl_file)


def _pem_of_cas(material: KeyMaterial, project_id: str, ref: str) -> bytes:
    cas = certificate_refs.ca_bundle(material, project_id, ref)
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in cas)


def _pool_files(
    material: KeyMaterial, project_id: str, pool: Pool, tls_dir: str, bundle: TlsBundle
) -> PoolTlsFiles:
    client = ca_file = crl_file = None
    if pool.tls_container_ref:
        pem = certificate_refs.server_certificate(material, project_id, pool.tls_container_ref)
        client = bundle.add(tls_dir, pem.pem_bundle())
    if pool.ca_tls_container_ref:
        ca_file = bundle.add(tls_dir, _pem_of_cas(material, project_id, pool.ca_tls_container_ref))
        if pool.crl_container_ref:
            crl = certificate_refs.revocation_list(material, project_id, pool.crl_container_ref)
            crl_file = bundle.add(tls_dir, crl.public_bytes(serialization.Encoding.PEM))
    return PoolTlsFiles(client_certificate=client, ca_file=ca_file, crl_file=crl_file)


def _not_retrieved(owner: str, exc: Unresolvable) -> ConvergeError:
    """ERROR for a reference that does not resolve; a retry when its key manager was out of
    reach (the load balancer stays PENDING and is converged again after a backoff)."""
    message = f"{owner}: a certificate could not be retrieved ({exc})."
    if exc.transient:
        return TemporaryError(message, delay=_KEY_MANAGER_RETRY)
    return PermanentError(message)


def _add_pools(graph: LoadBalancer, material: KeyMaterial, tls_dir: str, bundle: TlsBundle) -> None:
    for pool in graph.pools:
        refs = (pool.tls_container_ref, pool.ca_tls_container_ref)
        if not pool.tls_enabled or not any(refs):
            continue
        try:
            files = _pool_files(material, graph.project_id, pool, tls_dir, bundle)
        except Unresolvable as exc:
            raise _not_retrieved(f"Pool {pool.id}", exc) from exc
        bundle.by_pool[pool.id] = files


def tls_bundle(graph: LoadBalancer, material: KeyMaterial, tls_dir: str) -> TlsBundle:
    bundle = TlsBundle()
    _add_pools(graph, material, tls_dir, bundle)
    for listener in graph.listeners:
        if not listener.terminates_tls:
            continue
        try:
            files = _listener_files(material, graph.project_id, listener, tls_dir, bundle)
        except Unresolvable as exc:
            raise _not_retrieved(f"Listener {listener.id}", exc) from exc
        bundle.by_listener[listener.id] = files
    return bundle
