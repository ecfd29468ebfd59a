"""TLS options of listeners (which terminate TLS) and pools (which re-encrypt to members).

Both accept the same TLS versions and ALPN protocols. What each gets for a value its request
leaves out is the operator's (``[api] default_listener_*`` and ``default_pool_*``, Octavia's
settings of the same names), and each resource words its refusals as the reference does for
it, so the messages are the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

from lbaas.config import AlpnProtocol, ApiSettings, TlsVersion
from lbaas.errors import ValidationFailure

TLS_VERSIONS: tuple[str, ...] = get_args(TlsVersion)
ALPN_PROTOCOLS: tuple[str, ...] = get_args(AlpnProtocol)


@dataclass(frozen=True)
class TlsDefaults:
    """What a terminating listener or a re-encrypting pool gets for what it leaves out."""

    ciphers: str
    versions: tuple[str, ...]
    alpn_protocols: tuple[str, ...]


def listener_defaults(api: ApiSettings) -> TlsDefaults:
    return TlsDefaults(
        api.default_listener_ciphers,
        api.default_listener_tls_versions,
        api.default_listener_alpn_protocols,
    )


def pool_defaults(api: ApiSettings) -> TlsDefaults:
    return TlsDefaults(
        api.default_pool_ciphers, api.default_pool_tls_versions, api.default_pool_alpn_protocols
    )


def check_versions(versions: Sequence[str] | None, *, empty: str) -> None:
    """Left out (None) passes; an empty list fails with ``empty``; unknown versions fail."""
    _check_choices(versions, TLS_VERSIONS, empty, "Invalid TLS versions")


def check_alpn(protocols: Sequence[str] | None, *, empty: str) -> None:
    """Left out (None) passes; an empty list fails with ``empty``; unknown protocols fail."""
    _check_choices(protocols, ALPN_PROTOCOLS, empty, "Invalid ALPN protocol")


def _check_choices(
    values: Sequence[str] | None, allowed: Sequence[str], empty: str, invalid: str
) -> None:
    if values is None:
        return
    if not values:
        raise ValidationFailure(empty)
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValidationFailure(f"{invalid}: {', '.join(bad)}")
