"""Listeners as HAProxy frontends.

HTTP listeners are ``mode http``; TCP and HTTPS (TLS passed through untouched) listeners
are ``mode tcp``; a PROMETHEUS listener is an HTTP frontend that answers ``/metrics`` with
HAProxy's built-in exporter (compiled into 2.6 as ``prometheus-exporter``) and 404
elsewhere. Every frontend binds the VIP from the context on the listener's port.

``connection_limit`` is the frontend ``maxconn`` (-1 and 0 take the context's default, as
Octavia's amphora does), ``timeout_client_data`` is ``timeout client`` and
``timeout_tcp_inspect`` is ``tcp-request inspect-delay``; the member timeouts belong to
the backend (see ``timeouts``). ``allowed_cidrs`` rejects every other source at
``tcp-request connection`` time, before any byte is read.

A listener without a default pool still gets a frontend: an HTTP one answers 503 to
requests no L7 policy routes (HAProxy does this when no backend was chosen), a TCP one
closes every connection.

With an access-log socket in the context, each frontend but PROMETHEUS writes one line per
HTTP request or TCP connection (``access_log``).

``insert_headers`` only applies to HTTP listeners (Octavia's API refuses it elsewhere):
X-Forwarded-For is ``option forwardfor``; X-Forwarded-Port, X-Forwarded-Proto and the
client-address headers (X-Forwarded-IP, X-Client-IP, X-Real-IP) are ``http-request
set-header``. A header is inserted when its value is the string ``true`` in any case. The
X-SSL-* headers need TLS termination, which is refused before this point.
"""

from __future__ import annotations

from collections.abc import Mapping

from lbaas.model.enums import ListenerProtocol
from lbaas.model.graph import Listener, LoadBalancer
from lbaas.render.haproxy.access_log import access_log_format
from lbaas.render.haproxy.addresses import is_ipv6, normalised_address, normalised_cidrs
from lbaas.render.haproxy.context import HaproxyContext
from lbaas.render.haproxy.l7 import L7Routing, l7_routing_of
from lbaas.render.haproxy.names import backend_name, frontend_name
from lbaas.render.haproxy.timeouts import client_timeout_ms, inspect_delay_ms
from lbaas.render.haproxy.tls import CLIENT_CERT_FETCHES, bind_tls_of, hsts_value
from lbaas.render.haproxy.view import Frontend, HeaderInsertion, Mode

NO_POOL_HTTP_NOTE = "No default pool: requests no L7 policy routes are answered 503."
NO_POOL_TCP_NOTE = "No default pool: connections are closed."

_SET_HEADERS: tuple[tuple[str, str], ...] = (
    ("X-Forwarded-Port", "%[dst_port]"),
    ("X-Forwarded-Proto", "http"),
    ("X-Forwarded-IP", "%[src]"),
    ("X-Client-IP", "%[src]"),
    ("X-Real-IP", "%[src]"),
)
_FORWARDED_FOR = "x-forwarded-for"


def frontend_of(listener: Listener, lb: LoadBalancer, ctx: HaproxyContext) -> Frontend:
    """The frontend serving a listener (HTTP, TERMINATED_HTTPS, TCP, HTTPS or PROMETHEUS)."""
    terminated = listener.protocol is ListenerProtocol.TERMINATED_HTTPS
    http = listener.protocol is ListenerProtocol.HTTP or terminated
    prometheus = listener.protocol is ListenerProtocol.PROMETHEUS
    default_backend = _default_backend(listener, lb) if not prometheus else None
    routing = l7_routing_of(listener, lb) if http else L7Routing()
    headers = listener.insert_headers if http else {}
    tls_files = ctx.listener_tls.get(listener.id) if listener.terminates_tls else None
    notes: tuple[str, ...] = ()
    if default_backend is None and not prometheus:
        notes = (NO_POOL_HTTP_NOTE if http else NO_POOL_TCP_NOTE,)
    return Frontend(
        name=frontend_name(listener.id),
        mode=Mode.HTTP if http or prometheus else Mode.TCP,
        bind_address=normalised_address(ctx.bind_address),
        port=listener.protocol_port,
        enabled=lb.admin_state_up and listener.admin_state_up,
        maxconn=frontend_maxconn(listener, ctx),
        timeout_client_ms=client_timeout_ms(listener),
        inspect_delay_ms=inspect_delay_ms(listener),
        allowed_cidrs=normalised_cidrs(listener.allowed_cidrs),
        reject_all=default_backend is None and not http and not prometheus,
        prometheus_exporter=prometheus,
        forward_for=header_wanted(headers, _FORWARDED_FOR),
        header_insertions=header_insertions(headers, terminated),
        acls=routing.acls,
        denies=routing.denies,
        redirects=routing.redirects,
        switches=routing.switches,
        default_backend=default_backend,
        notes=notes,
        tls=None
        if tls_files is None
        else bind_tls_of(listener, tls_files, ctx.minimum_tls_version),
        response_headers=_hsts(listener) if terminated else (),
        log_format=_log_format(listener, lb, ctx, http, terminated),
    )


def _log_format(
    listener: Listener, lb: LoadBalancer, ctx: HaproxyContext, http: bool, terminated: bool
) -> str | None:
    """Every listener but PROMETHEUS (its scrapes are not tenant traffic) logs when asked."""
    if ctx.access_log_socket is None or listener.protocol is ListenerProtocol.PROMETHEUS:
        return None
    ipv4 = not is_ipv6(normalised_address(ctx.bind_address))
    return access_log_format(lb.project_id, lb.id, listener.id, http, terminated, ipv4)


def _hsts(listener: Listener) -> tuple[HeaderInsertion, ...]:
    value = hsts_value(listener)
    return () if value is None else (HeaderInsertion("Strict-Transport-Security", value),)


def frontend_maxconn(listener: Listener, ctx: HaproxyContext) -> int:
    """The listener's connection limit, or the context's default when it has none."""
    limit = listener.connection_limit
    return limit if limit > 0 else ctx.maxconn_default


def header_insertions(
    insert_headers: Mapping[str, str], terminated: bool = False
) -> tuple[HeaderInsertion, ...]:
    """The ``set-header`` rules asked for, in a fixed order (X-SSL-* when terminating)."""
    plain = tuple(
        HeaderInsertion(name, "https" if terminated and name == "X-Forwarded-Proto" else value)
        for name, value in _SET_HEADERS
        if header_wanted(insert_headers, name.lower())
    )
    if not terminated:
        return plain
    return plain + tuple(
        HeaderInsertion(name, fetch)
        for name, fetch in CLIENT_CERT_FETCHES.items()
        if header_wanted(insert_headers, name.lower())
    )


def header_wanted(insert_headers: Mapping[str, str], lower_name: str) -> bool:
    """Whether ``insert_headers`` asks for the header (keys and values case-insensitive)."""
    return any(
        key.lower() == lower_name and value.strip().lower() == "true"
        for key, value in insert_headers.items()
    )


def _default_backend(listener: Listener, lb: LoadBalancer) -> str | None:
    if listener.default_pool_id is None or lb.pool(listener.default_pool_id) is None:
        return None
    return backend_name(listener.default_pool_id)
