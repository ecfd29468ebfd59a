"""The tls hop: can every reference the load balancer's TLS needs be read now, and
how long its certificates have left.

A converge reads the references only when the load balancer changes, so a secret deleted,
an ACL withdrawn in Barbican or a certificate about to lapse shows nowhere until the next
change fails. This hop reads them as the worker would (the listeners that terminate TLS:
their certificates, client CA and CRL; the re-encrypting pools: client certificate, CA,
CRL) and names the first that does not resolve, or the certificate closest to its end.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

from lbaas.certs.tls_material import ServerCertificate
from lbaas.diagnose.verdict import Level, Verdict
from lbaas.keyrefs import certificates
from lbaas.keyrefs.base import KeyMaterial, Unresolvable
from lbaas.model.graph import LoadBalancer

HOP = "tls"  # short: the hop names are a column on the terminal
_Load = Callable[[KeyMaterial, str, str], object]


def _wanted(graph: LoadBalancer) -> Iterator[tuple[str, str, _Load]]:
    """(owner, reference, loader) for every reference the data plane would be given."""
    for listener in graph.listeners:
        if not listener.terminates_tls:
            continue
        owner = f"listener {listener.id}"
        for ref in dict.fromkeys(
            [listener.default_tls_container_ref, *listener.sni_container_refs]
        ):
            if ref:
                yield owner, ref, certificates.server_certificate
        if listener.client_ca_tls_container_ref:
            yield owner, listener.client_ca_tls_container_ref, certificates.ca_bundle
        if listener.client_crl_container_ref:
            yield owner, listener.client_crl_container_ref, certificates.revocation_list
    for pool in graph.pools:
        if not pool.tls_enabled:
            continue
        owner = f"pool {pool.id}"
        if pool.tls_container_ref:
            yield owner, pool.tls_container_ref, certificates.server_certificate
        if pool.ca_tls_container_ref:
            yield owner, pool.ca_tls_container_ref, certificates.ca_bundle
        if pool.crl_container_ref:
            yield owner, pool.crl_container_ref, certificates.revocation_list


def certificate_hop(graph: LoadBalancer, material: KeyMaterial, now: dt.datetime) -> Verdict:
    wanted = list(_wanted(graph))
    if not wanted:
        return Verdict(HOP, Level.SKIP, "no listener terminates TLS, no pool re-encrypts")
    unreadable: list[str] = []
    soonest: tuple[dt.datetime, str] | None = None
    for owner, ref, load in wanted:
        try:
            found = load(material, graph.project_id, ref)
        except Unresolvable as exc:
            unreadable.append(f"{owner}: {ref} cannot be read ({exc})")
            continue
        if isinstance(found, ServerCertificate):
            not_after = found.certificate.not_valid_after_utc
            if soonest is None or not_after < soonest[0]:
                soonest = (not_after, f"{owner}: certificate {ref}")
    if unreadable:
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        return Verdict(HOP, Level.FAIL, unreadable[0] + more)
    if soonest is None:
        return Verdict(HOP, Level.OK, f"{len(wanted)} references readable")
    not_after, which = soonest
    when = f"{not_after:%Y-%m-%d %H:%M} UTC"
    if not_after <= now:
        return Verdict(HOP, Level.FAIL, f"{which} expired {when}")
    left = f"expires {when}, in {(not_after - now).days} days"
    if not_after - now < certificates.EXPIRY_WARNING:
        return Verdict(HOP, Level.WARN, f"{which} {left}")
    return Verdict(HOP, Level.OK, f"{len(wanted)} references readable; the soonest {left}")
