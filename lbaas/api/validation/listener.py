"""Listener rules that need no database: headers, TLS and HSTS, allowed CIDRs, ports.

The API checks a listener as a whole: a POST checks what was sent (with defaults), a PUT
checks the stored listener with the request laid over it, so the same function decides
both and an update can never leave a combination a create would have refused.

Certificates. Octavia fetches every certificate reference from a key manager (Barbican)
before accepting a listener; lbaas resolves them in its own key manager
(``lbaas.api.certificates``), after the checks here that need only the request, the way
a real fetch is the last and costliest step.

The operator's switches (disabling TLS-terminated or PROMETHEUS listeners, a minimum TLS
version, a cipher prohibit-list) are ``operator_policy``'s, judged on what a request sent.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NoReturn

from lbaas.api.validation import tls
from lbaas.errors import Conflict, InvalidInput, ValidationFailure
from lbaas.model.enums import (
    LISTENER_POOL_COMPATIBILITY,
    ClientAuthentication,
    ListenerProtocol,
    PoolProtocol,
)

HTTP_HEADERS = frozenset(
    {
        "X-Forwarded-For",
        "X-Forwarded-Port",
        "X-Forwarded-Proto",
        "X-Forwarded-IP",
        "X-Client-IP",
        "X-Real-IP",
    }
)
CLIENT_CERT_HEADERS = frozenset(
    {
        "X-SSL-Client-Verify",
        "X-SSL-Client-Has-Cert",
        "X-SSL-Client-DN",
        "X-SSL-Client-CN",
        "X-SSL-Issuer",
        "X-SSL-Client-SHA1",
        "X-SSL-Client-Not-Before",
        "X-SSL-Client-Not-After",
    }
)
HEADER_PROTOCOLS = frozenset({ListenerProtocol.HTTP, ListenerProtocol.TERMINATED_HTTPS})
DATAGRAM_PROTOCOLS = frozenset({ListenerProtocol.UDP, ListenerProtocol.SCTP})

# The reference's wording for a listener's empty lists (a pool's differs).
_EMPTY_VERSIONS = (
    "Empty TLS version list. Send at least one version, or leave the field out to get the default."
)
_EMPTY_ALPN = (
    "Empty ALPN protocol list. Send at least one protocol, or leave the field out to get "
    "the default."
)
_CIPHER_CHARS = re.compile(r"[A-Za-z0-9\-+!:@=_.]+")

DEFAULT_TIMEOUTS = {
    "timeout_client_data": 50000,
    "timeout_member_connect": 5000,
    "timeout_member_data": 50000,
    "timeout_tcp_inspect": 0,
}


@dataclass(frozen=True)
class ListenerSettings:
    """The parts of a listener whose combination is validated (the final, merged values)."""

    protocol: ListenerProtocol
    insert_headers: Mapping[str, str]
    default_tls_container_ref: str | None
    sni_container_refs: tuple[str, ...]
    client_ca_tls_container_ref: str | None
    client_authentication: ClientAuthentication
    client_crl_container_ref: str | None
    tls_ciphers: str | None
    tls_versions: tuple[str, ...] | None
    alpn_protocols: tuple[str, ...] | None
    hsts_max_age: int | None
    hsts_include_subdomains: bool
    hsts_preload: bool

    @property
    def has_certificate(self) -> bool:
        return bool(self.default_tls_container_ref or self.sni_container_refs)

    @property
    def offloads_tls(self) -> bool:
        """TERMINATED_HTTPS, or PROMETHEUS with a certificate (served over TLS)."""
        if self.protocol is ListenerProtocol.TERMINATED_HTTPS:
            return True
        return self.protocol is ListenerProtocol.PROMETHEUS and self.has_certificate

    @property
    def any_reference(self) -> bool:
        return self.has_certificate or bool(
            self.client_ca_tls_container_ref or self.client_crl_container_ref
        )


def with_tls_defaults(settings: ListenerSettings, defaults: tls.TlsDefaults) -> ListenerSettings:
    """Fill TERMINATED_HTTPS defaults; drop TLS options on listeners that do not offload."""
    if not settings.offloads_tls:
        return replace(settings, tls_ciphers=None, tls_versions=None, alpn_protocols=None)
    if settings.protocol is not ListenerProtocol.TERMINATED_HTTPS:
        return settings
    return replace(
        settings,
        tls_ciphers=settings.tls_ciphers or defaults.ciphers,
        tls_versions=_or_default(settings.tls_versions, defaults.versions),
        alpn_protocols=_or_default(settings.alpn_protocols, defaults.alpn_protocols),
    )


def _or_default(sent: tuple[str, ...] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    return sent if sent is not None else default


def check_insert_headers(protocol: ListenerProtocol, headers: Iterable[str]) -> None:
    names = list(headers)
    if not names:
        return
    if protocol not in HEADER_PROTOCOLS:
        raise InvalidInput(
            f"insert-headers is not a valid option for a {protocol.value} protocol listener."
        )
    unknown = [n for n in names if n not in HTTP_HEADERS | CLIENT_CERT_HEADERS]
    if unknown:
        raise InvalidInput(f"{unknown} is not a valid option for insert_headers")
    client_cert = [n for n in names if n in CLIENT_CERT_HEADERS]
    if client_cert and protocol is not ListenerProtocol.TERMINATED_HTTPS:
        raise InvalidInput(
            f"{client_cert} is not a valid option for {protocol.value} protocol listener."
        )


def check_settings(settings: ListenerSettings) -> None:
    """Every rule of the combination, in the order the reference reports them."""
    protocol = settings.protocol.value
    check_insert_headers(settings.protocol, settings.insert_headers)
    if settings.protocol in DATAGRAM_PROTOCOLS and settings.any_reference:
        raise ValidationFailure(f"{protocol} protocol listener does not support TLS.")
    if not settings.offloads_tls and settings.any_reference:
        raise ValidationFailure(
            f"Certificate container references are not allowed on {protocol} protocol listeners."
        )
    if settings.client_ca_tls_container_ref and not settings.has_certificate:
        raise ValidationFailure(
            "An SNI or default certificate container reference must be provided with a "
            "client CA container reference."
        )
    if settings.offloads_tls and not settings.has_certificate:
        raise ValidationFailure(
            "An SNI or default certificate container reference must be provided for "
            f"{protocol} protocol listeners."
        )
    auth = settings.client_authentication
    if auth is not ClientAuthentication.NONE and not settings.client_ca_tls_container_ref:
        raise ValidationFailure(
            f"Client authentication setting {auth.value} requires a client CA container reference."
        )
    if settings.client_crl_container_ref and not settings.client_ca_tls_container_ref:
        raise ValidationFailure(
            "A client CA container reference is required to use a certificate revocation list."
        )
    if settings.offloads_tls:
        check_tls_options(settings.tls_ciphers, settings.tls_versions, settings.alpn_protocols)
    check_hsts(settings)


def check_tls_options(
    ciphers: str | None, versions: Sequence[str] | None, alpn: Sequence[str] | None
) -> None:
    tls.check_versions(versions, empty=_EMPTY_VERSIONS)
    if ciphers is not None and not _CIPHER_CHARS.fullmatch(ciphers):
        raise ValidationFailure(
            "tls_ciphers may contain only letters, digits and the characters - + ! : @ = _ ."
        )
    tls.check_alpn(alpn, empty=_EMPTY_ALPN)


def check_hsts(settings: ListenerSettings) -> None:
    if (
        settings.hsts_max_age is not None
        and settings.protocol is not ListenerProtocol.TERMINATED_HTTPS
    ):
        raise ValidationFailure(
            "HSTS can only be configured on TERMINATED_HTTPS protocol listeners."
        )
    if (settings.hsts_include_subdomains or settings.hsts_preload) and (
        settings.hsts_max_age is None
    ):
        raise ValidationFailure(
            "hsts_include_subdomains and hsts_preload require hsts_max_age to be set."
        )


def normalise_cidrs(cidrs: Iterable[str] | None) -> list[str] | None:
    """Host bits cleared, duplicates dropped (first wins); an empty list means none."""
    out: list[str] = []
    for cidr in cidrs or ():
        text = str(ipaddress.ip_network(cidr, strict=False))
        if text not in out:
            out.append(text)
    return out or None


def check_cidrs(
    cidrs: Sequence[str] | None, vip_addresses: Sequence[str], vip_sg_ids: Sequence[str]
) -> None:
    if not cidrs:
        return
    if vip_sg_ids:
        raise ValidationFailure(
            "allowed_cidrs cannot be used on a load balancer that has vip_sg_ids."
        )
    if not vip_addresses:
        return
    families = {ipaddress.ip_address(a).version for a in vip_addresses}
    for cidr in cidrs:
        if ipaddress.ip_network(cidr, strict=False).version not in families:
            raise ValidationFailure(
                f"CIDR {cidr} IP version incompatible with all VIPs {list(vip_addresses)} "
                "IP version."
            )


def check_port_free(
    protocol: ListenerProtocol, port: int, others: Iterable[tuple[str, int]]
) -> None:
    """409 if another listener on the LB binds the port with the same transport."""
    for other_protocol, other_port in others:
        if other_port != port:
            continue
        if ListenerProtocol(other_protocol).l4_family == protocol.l4_family:
            raise Conflict(
                "Another Listener on this Load Balancer is already using protocol "
                f"{protocol.value} and protocol_port {port}"
            )


def check_pool_protocol(listener_protocol: ListenerProtocol, pool_protocol: str) -> None:
    """§4.1: which pool protocols a listener may send traffic to."""
    if listener_protocol is ListenerProtocol.PROMETHEUS:
        raise_no_children()
    allowed = LISTENER_POOL_COMPATIBILITY[listener_protocol]
    if PoolProtocol(pool_protocol) not in allowed:
        raise ValidationFailure(
            f"The pool protocol '{pool_protocol}' is invalid while the listener protocol is "
            f"'{listener_protocol.value}'."
        )


def raise_no_children() -> NoReturn:
    raise InvalidInput("Protocol PROMETHEUS listeners cannot have child objects.")
