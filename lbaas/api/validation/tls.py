"""TLS options of listeners (which terminate TLS) and pools (which re-encrypt to members).

Both accept the same TLS versions and ALPN protocols and default to the same lists. Their
default cipher strings hold the same suites in a different order (the reference's listener
and pool defaults), and each resource words its refusals as the reference does for it, so
the messages are the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence

from lbaas.errors import ValidationFailure

TLS_VERSIONS = ("SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
ALPN_PROTOCOLS = ("h2", "http/1.1", "http/1.0")
DEFAULT_TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
DEFAULT_ALPN_PROTOCOLS = ("h2", "http/1.1", "http/1.0")

# OpenSSL cipher strings: the TLS 1.3 and DHE suites lead both; the ECDHE ones follow.
_TLS13_AND_DHE = (
    "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"
    ":DHE-RSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256"
)
LISTENER_TLS_CIPHERS = (
    _TLS13_AND_DHE + ":ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
    ":ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
    ":ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
)
POOL_TLS_CIPHERS = (
    _TLS13_AND_DHE + ":ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256"
    ":ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"
    ":ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-CHACHA20-POLY1305"
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
