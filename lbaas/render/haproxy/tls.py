"""TLS termination on a frontend: the ``bind … ssl`` options, HSTS and the X-SSL-* headers.

The certificates themselves are files the agent writes beside the configuration (mode
0600); the renderer only names them, through the context's ``ListenerTlsFiles``. The
bind reads a ``crt-list``: its first line is the default certificate (the
``default_tls_container_ref``, else the first SNI one) and every line is also chosen by
SNI for the names in its certificate, which is how HAProxy picks a certificate per host
name without the configuration listing the names.

Options, from the listener: ``client_authentication`` OPTIONAL/MANDATORY is ``verify
optional|required`` with the client CA (and CRL) files; ``tls_versions`` becomes a
``no-<version>`` for every version left out; ``tls_ciphers`` is split into TLS 1.2 and
older (``ciphers``) and TLS 1.3 suites (``ciphersuites``, the names starting ``TLS_``);
``alpn_protocols`` is ``alpn``, which is how clients negotiate HTTP/2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lbaas.model.enums import ClientAuthentication
from lbaas.model.graph import Listener, Pool
from lbaas.render.haproxy.quoting import quoted

_NO_VERSION = {
    "SSLv3": "no-sslv3",
    "TLSv1": "no-tlsv10",
    "TLSv1.1": "no-tlsv11",
    "TLSv1.2": "no-tlsv12",
    "TLSv1.3": "no-tlsv13",
}
_VERIFY = {
    ClientAuthentication.NONE: "none",
    ClientAuthentication.OPTIONAL: "optional",
    ClientAuthentication.MANDATORY: "required",
}
# Octavia's X-SSL-* headers and the HAProxy fetches that fill them.
CLIENT_CERT_FETCHES: Mapping[str, str] = {
    "X-SSL-Client-Verify": "%[ssl_c_verify]",
    "X-SSL-Client-Has-Cert": "%[ssl_c_used]",
    "X-SSL-Client-DN": "%{+Q}[ssl_c_s_dn]",
    "X-SSL-Client-CN": "%{+Q}[ssl_c_s_dn(cn)]",
    "X-SSL-Issuer": "%{+Q}[ssl_c_i_dn]",
    "X-SSL-Client-SHA1": "%{+Q}[ssl_c_sha1,hex]",
    "X-SSL-Client-Not-Before": "%{+Q}[ssl_c_notbefore]",
    "X-SSL-Client-Not-After": "%{+Q}[ssl_c_notafter]",
}


@dataclass(frozen=True)
class ListenerTlsFiles:
    """Where the agent puts one listener's TLS files (absolute paths on its host)."""

    crt_list: str
    ca_file: str | None = None
    crl_file: str | None = None


@dataclass(frozen=True)
class BindTls:
    crt_list: str
    verify: str
    ca_file: str | None
    crl_file: str | None
    ciphers: str | None
    ciphersuites: str | None
    disabled_versions: tuple[str, ...]
    alpn: tuple[str, ...]


def bind_tls_of(
    listener: Listener, files: ListenerTlsFiles, minimum_version: str | None = None
) -> BindTls:
    """``minimum_version`` stands in for a listener that names no versions (see the
    context's ``minimum_tls_version``)."""
    auth = listener.client_authentication
    verifying = auth is not ClientAuthentication.NONE and files.ca_file is not None
    legacy, modern = _split_ciphers(listener.tls_ciphers)
    versions = listener.tls_versions
    if versions is None and minimum_version in _NO_VERSION:
        names = list(_NO_VERSION)
        versions = tuple(names[names.index(str(minimum_version)) :])
    return BindTls(
        crt_list=files.crt_list,
        verify=_VERIFY[auth] if verifying else "none",
        ca_file=files.ca_file if verifying else None,
        crl_file=files.crl_file if verifying else None,
        ciphers=legacy,
        ciphersuites=modern,
        disabled_versions=tuple(
            flag
            for name, flag in _NO_VERSION.items()
            if versions is not None and name not in versions
        ),
        alpn=tuple(listener.alpn_protocols or ()),
    )


def _split_ciphers(ciphers: str | None) -> tuple[str | None, str | None]:
    if not ciphers:
        return None, None
    names = [c for c in ciphers.split(":") if c]
    legacy = ":".join(c for c in names if not c.startswith("TLS_"))
    modern = ":".join(c for c in names if c.startswith("TLS_"))
    return legacy or None, modern or None


def bind_words(tls: BindTls) -> list[str]:
    """The words after ``bind <address>:<port>``."""
    words = ["ssl", "crt-list", quoted(tls.crt_list)]
    if tls.ca_file is not None:
        words += ["ca-file", quoted(tls.ca_file), "verify", tls.verify]
        if tls.crl_file is not None:
            words += ["crl-file", quoted(tls.crl_file)]
    if tls.ciphers is not None:
        words += ["ciphers", tls.ciphers]
    if tls.ciphersuites is not None:
        words += ["ciphersuites", tls.ciphersuites]
    words += list(tls.disabled_versions)
    if tls.alpn:
        words += ["alpn", ",".join(tls.alpn)]
    return words


def hsts_value(listener: Listener) -> str | None:
    if listener.hsts_max_age is None:
        return None
    parts = [f"max-age={listener.hsts_max_age}"]
    if listener.hsts_include_subdomains:
        parts.append("includeSubDomains")
    if listener.hsts_preload:
        parts.append("preload")
    return '"' + "; ".join(parts) + '"'


@dataclass(frozen=True)
class PoolTlsFiles:
    """Where the agent puts one pool's TLS files: the client certificate presented to
    members, the CA that verifies them and its CRL."""

    client_certificate: str | None = None
    ca_file: str | None = None
    crl_file: str | None = None


def server_tls_words(pool: Pool, files: PoolTlsFiles) -> list[str]:
    """``ssl`` and its options on every server line of a ``tls_enabled`` pool: members are
    verified when a CA is given (``verify none`` otherwise, as Octavia does)."""
    words = ["ssl"]
    if files.ca_file is not None:
        words += ["verify", "required", "ca-file", quoted(files.ca_file)]
        if files.crl_file is not None:
            words += ["crl-file", quoted(files.crl_file)]
    else:
        words += ["verify", "none"]
    if files.client_certificate is not None:
        words += ["crt", quoted(files.client_certificate)]
    legacy, modern = _split_ciphers(pool.tls_ciphers)
    if legacy is not None:
        words += ["ciphers", legacy]
    if modern is not None:
        words += ["ciphersuites", modern]
    versions = pool.tls_versions
    if versions is not None:
        words += [flag for name, flag in _NO_VERSION.items() if name not in versions]
    if pool.alpn_protocols:
        words += ["alpn", ",".join(pool.alpn_protocols)]
    return words
