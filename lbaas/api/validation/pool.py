"""The pool rules that need no database: protocols, session persistence, TLS options.

They are plain functions of values so the pool router, the single-call load balancer
create and the unit tests share them. Each failure raises the ``lbaas.errors`` type and
wording Octavia clients expect ("Validation failure: …" for semantic checks, bare
messages for the option and certificate errors).

Certificates: lbaas has no key manager to fetch secrets from, so a reference to one can
never be resolved. Octavia answers an unfetchable reference with 400 ``Could not retrieve
certificate: [...]``, and so does lbaas, for every pool certificate reference; the check
that a revocation list comes with a CA runs first, as in the reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lbaas.api.validation import tls
from lbaas.errors import InvalidInput, ValidationFailure
from lbaas.model.enums import (
    LISTENER_POOL_COMPATIBILITY,
    ListenerProtocol,
    PersistenceType,
    PoolProtocol,
)
from lbaas.render.haproxy.inputs import is_fetch_argument

# The reference's wording for a pool's empty lists (a listener's differs).
_EMPTY_VERSIONS = (
    "Empty TLS version list. Either specify at least one TLS version or remove this "
    "parameter to use the default."
)
_EMPTY_ALPN = (
    "Empty ALPN protocol list. Either specify at least one ALPN protocol or remove this "
    "parameter to use the default."
)
DATAGRAM_PROTOCOLS = frozenset({PoolProtocol.UDP.value, PoolProtocol.SCTP.value})


@dataclass(frozen=True)
class Persistence:
    """A pool's session persistence as plain values (what is stored, as a dict)."""

    type: str | None
    cookie_name: str | None = None
    persistence_timeout: int | None = None
    persistence_granularity: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "type": self.type,
            "cookie_name": self.cookie_name,
            "persistence_timeout": self.persistence_timeout,
            "persistence_granularity": self.persistence_granularity,
        }


@dataclass(frozen=True)
class TlsRefs:
    """The three certificate references of a pool."""

    tls_container_ref: str | None = None
    ca_tls_container_ref: str | None = None
    crl_container_ref: str | None = None


def check_listener_pool_protocols(listener_protocol: str, pool_protocol: str) -> None:
    """A pool may serve a listener only if their protocols fit (§4.1)."""
    if listener_protocol == ListenerProtocol.PROMETHEUS.value:
        raise InvalidInput("Protocol PROMETHEUS listeners cannot have child objects.")
    allowed = LISTENER_POOL_COMPATIBILITY[ListenerProtocol(listener_protocol)]
    if PoolProtocol(pool_protocol) not in allowed:
        raise ValidationFailure(
            f"The pool protocol '{pool_protocol}' is invalid while the listener protocol "
            f"is '{listener_protocol}'."
        )


def is_cookie_name(value: str) -> bool:
    """An RFC 6265 token that HAProxy can also read in ``req.cook(<name>)`` (the data
    plane's rule: token characters but ``#``, ``$`` and ``'``)."""
    return is_fetch_argument(value)


def _check_datagram_persistence(sp: Persistence) -> None:
    if sp.type == PersistenceType.SOURCE_IP.value and sp.cookie_name:
        raise ValidationFailure(
            "session_persistence SOURCE_IP type for UDP and SCTP protocols only accepts: "
            "type, persistence_timeout, persistence_granularity."
        )
    if sp.cookie_name:
        raise ValidationFailure("Cookie names are not supported for UDP and SCTP pools.")
    if sp.type != PersistenceType.SOURCE_IP.value:
        raise ValidationFailure(
            f"Session persistence of type {sp.type} is not supported for UDP and SCTP "
            "protocol pools."
        )


def check_session_persistence(sp: Persistence, pool_protocol: str) -> None:
    """Session persistence rules of §4.4 for a pool of ``pool_protocol``."""
    if pool_protocol in DATAGRAM_PROTOCOLS:
        _check_datagram_persistence(sp)
    elif sp.persistence_timeout or sp.persistence_granularity:
        raise ValidationFailure(
            "persistence_timeout and persistence_granularity is only for UDP and SCTP "
            "protocol pools."
        )
    if sp.cookie_name:
        if sp.type != PersistenceType.APP_COOKIE.value:
            raise ValidationFailure(
                'Field "cookie_name" can only be specified with session persistence of '
                'type "APP_COOKIE".'
            )
        if not is_cookie_name(sp.cookie_name):
            raise ValidationFailure('Supplied "cookie_name" is invalid.')
    elif sp.type == PersistenceType.APP_COOKIE.value:
        raise ValidationFailure(
            'Field "cookie_name" must be specified when using the "APP_COOKIE" session '
            "persistence type."
        )


def check_tls_versions(versions: Sequence[str] | None) -> None:
    tls.check_versions(versions, empty=_EMPTY_VERSIONS)


def check_alpn_protocols(protocols: Sequence[str] | None) -> None:
    tls.check_alpn(protocols, empty=_EMPTY_ALPN)


def check_tls_refs_on_create(refs: TlsRefs) -> None:
    if refs.crl_container_ref and not refs.ca_tls_container_ref:
        raise ValidationFailure(
            "A CA certificate reference is required to specify a revocation list."
        )


def check_tls_refs_on_update(stored: TlsRefs, sent: Mapping[str, str | None]) -> None:
    """``sent`` holds only the reference fields present in the PUT body."""
    crl = sent.get("crl_container_ref", stored.crl_container_ref)
    if "ca_tls_container_ref" in sent:
        ca = sent["ca_tls_container_ref"]
        if not ca and crl and stored.ca_tls_container_ref:
            raise ValidationFailure(
                "A CA reference cannot be removed when a certificate revocation list is present."
            )
        if not ca and crl:
            raise ValidationFailure(
                "A CA reference is required to specify a certificate revocation list."
            )
    elif crl and not stored.ca_tls_container_ref:
        raise ValidationFailure(
            "A CA reference is required to specify a certificate revocation list."
        )
