"""The controller renewing one agent's certificate over the channel it already has.

The agent makes a new key and sends a signing request; the CA signs the request's public
key (after checking the request's own signature: the agent holds that key) with the
names the controller chooses, the same ones ``lbaas agent enrol`` puts in a bundle: the
host's fleet name and its recorded address. The agent installs it and its HTTPS server
presents it to the next connection. See ``lbaas.wire.certificates``.
"""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from lbaas.certs.authority import CertificateAuthority
from lbaas.certs.renewal import renewal_due
from lbaas.errors import PermanentError
from lbaas.fleet.client import AgentClient
from lbaas.fleet.enrolment import identity_names
from lbaas.model.fleet import HostAddress


def presented(client: AgentClient) -> x509.Certificate:
    """The certificate the agent says it presents."""
    return x509.load_pem_x509_certificate(client.certificate().certificate.encode())


def renew_agent(
    client: AgentClient,
    ca: CertificateAuthority,
    host: HostAddress,
    now: datetime.datetime | None = None,
) -> x509.Certificate:
    """Issue the agent a certificate for a new key of its own, valid from ``now`` (the
    clock's by default); returns it, installed."""
    request = x509.load_pem_x509_csr(client.signing_request().csr.encode())
    if not request.is_signature_valid:
        raise PermanentError(
            "The agent sent an unusable certificate request.",
            f"host {host.host_id}: the signing request's signature does not verify",
        )
    ips, dns = identity_names(host.host_id, host.address)
    certificate = ca.sign(
        request.public_key(), host.host_id, "server", ip_addresses=ips, dns_names=dns, now=now
    )
    client.install_certificate(certificate.public_bytes(serialization.Encoding.PEM).decode())
    return certificate


def renew_if_due(
    client: AgentClient, ca: CertificateAuthority, host: HostAddress, now: datetime.datetime
) -> bool:
    """Renew the agent's certificate if it is due or from another CA; whether it was.
    An agent that holds the CA itself (``lbaas serve``'s) renews its own."""
    state = client.certificate()
    if state.self_renewing:
        return False
    current = x509.load_pem_x509_certificate(state.certificate.encode())
    if ca.issued_this(current) and not renewal_due(current, now):
        return False
    renew_agent(client, ca, host, now)
    return True
