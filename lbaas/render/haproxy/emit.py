"""Writing the HAProxy view as configuration text.

All syntax lives here and nothing else: every decision was taken by the transform step, so
each function below is a straight mapping from a record to lines. Three rules hold
throughout. Strings that did not come from the renderer (paths, rule values, URLs, host
names) are written with ``quoted``; the few that cannot be quoted were checked by the
transform instead (ids by ``names``, header and cookie names by ``fetch_argument``), and
addresses are written with ``addresses``. Within a frontend, directives appear in the
order HAProxy evaluates them (``tcp-request`` rules, ``http-request`` rules, ``redirect``,
``use_backend``, ``default_backend``), so the text reads as it runs and HAProxy has no
ordering warning to give. Durations are written in the largest whole unit (``30m``,
``5s``, ``1500ms``).

Sizes that are fixed choices rather than graph data are constants here: stick tables hold
100k entries (a few megabytes at most) and an application cookie is keyed on its first 64
bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import assert_never

from lbaas.render.haproxy.access_log import RING, global_log_line, ring_lines
from lbaas.render.haproxy.addresses import address_port_word, address_word
from lbaas.render.haproxy.probe_source import VIP_PROBE_SOURCE_PORT
from lbaas.render.haproxy.quoting import log_format_literal, quoted
from lbaas.render.haproxy.tls import bind_words
from lbaas.render.haproxy.view import (
    AclTerm,
    AppCookieStickiness,
    Backend,
    CookieInsertion,
    Frontend,
    GlobalSection,
    HaproxyConfig,
    HealthCheck,
    PeersSection,
    Persistence,
    Server,
    SourceStickiness,
)

INDENT = "    "
STICK_TABLE_SIZE = "100k"
APP_COOKIE_KEY_LENGTH = 64
EXTERNAL_CHECK_PATH = "/usr/bin:/bin"
ALLOWED_CIDRS_ACL = "allowed_cidrs"
CIDRS_PER_LINE = 16
DEFAULTS = (
    "load-server-state-from-file global",
    "retries 3",
    "option redispatch",
    "timeout connect 5s",
    "timeout client 50s",
    "timeout server 50s",
)


def emit_config(config: HaproxyConfig) -> str:
    """The whole configuration file, ending with a newline."""
    sections = [
        _header(config.load_balancer_id),
        _section("global", _global_lines(config.global_section)),
        *(
            ()
            if config.global_section.access_log_socket is None
            else (_section(f"ring {RING}", _ring_lines(config.global_section.access_log_socket)),)
        ),
        _section("defaults", DEFAULTS),
        *(
            ()
            if config.peers is None
            else (_section(f"peers {config.peers.name}", _peer_lines(config.peers)),)
        ),
        *(_section(f"frontend {fe.name}", _frontend_lines(fe)) for fe in config.frontends),
        *(_section(f"backend {be.name}", _backend_lines(be)) for be in config.backends),
    ]
    return "\n".join(sections)


def duration(milliseconds: int) -> str:
    """A time as HAProxy reads it, in the largest unit that keeps it whole (m, s or ms)."""
    if milliseconds > 0 and milliseconds % 60_000 == 0:
        return f"{milliseconds // 60_000}m"
    if milliseconds % 1000 == 0:
        return f"{milliseconds // 1000}s"
    return f"{milliseconds}ms"


def _header(load_balancer_id: str) -> str:
    return (
        f"# HAProxy configuration of load balancer {load_balancer_id}, rendered by lbaas.\n"
        "# Do not edit: the next change to the load balancer replaces this file.\n"
    )


def _section(title: str, lines: Iterable[str]) -> str:
    return title + "\n" + "".join(f"{INDENT}{line}\n" for line in lines)


def _global_lines(section: GlobalSection) -> Iterator[str]:
    yield f"maxconn {section.maxconn}"
    # HAProxy's built-in HTTP client (unused by lbaas) otherwise loads the whole system CA
    # bundle at every start: most of the time of `haproxy -c` and of every reload.
    yield "httpclient.ssl.verify none"
    yield (
        f"stats socket {quoted(section.runtime_socket)} mode 600 level admin expose-fd listeners"
    )
    yield f"server-state-file {quoted(section.server_state_file)}"
    if section.access_log_socket is not None:
        yield global_log_line()
    if section.hard_stop_after is not None:
        yield f"hard-stop-after {section.hard_stop_after}s"
    if section.local_peer is not None:
        yield f"localpeer {section.local_peer}"
    if section.user is not None:
        yield f"user {quoted(section.user)}"
    if section.group is not None:
        yield f"group {quoted(section.group)}"
    if section.external_checks:
        yield "external-check"
        yield "insecure-fork-wanted"


def _ring_lines(socket_path: str) -> tuple[str, ...]:
    # ``unix@`` makes the path a UNIX stream address; quoting keeps it one word.
    return ring_lines(quoted(f"unix@{socket_path}"))


def _peer_lines(section: PeersSection) -> Iterator[str]:
    for peer in section.peers:
        yield f"peer {peer.name} {address_port_word(peer.address, peer.port)}"


def _frontend_lines(fe: Frontend) -> Iterator[str]:
    yield from (f"# {note}" for note in fe.notes)
    yield f"mode {fe.mode}"
    tls_words = [] if fe.tls is None else bind_words(fe.tls)
    yield " ".join(["bind", address_port_word(fe.bind_address, fe.port), *tls_words])
    if not fe.enabled:
        yield "disabled"
    yield f"maxconn {fe.maxconn}"
    yield f"timeout client {duration(fe.timeout_client_ms)}"
    if fe.log_format is not None:
        yield "log global"
        yield f"log-format {quoted(fe.log_format)}"
    if fe.inspect_delay_ms is not None:
        yield f"tcp-request inspect-delay {duration(fe.inspect_delay_ms)}"
    # The agent's VIP probe: its handshake proves the VIP answers; rejected before a session
    # exists, it stays out of the tenant's connection counts (HAProxy's stot).
    probe = f"{{ src {fe.bind_address} }} {{ src_port {VIP_PROBE_SOURCE_PORT} }}"
    yield f"tcp-request connection reject if {probe}"
    if fe.allowed_cidrs:
        for start in range(0, len(fe.allowed_cidrs), CIDRS_PER_LINE):
            chunk = fe.allowed_cidrs[start : start + CIDRS_PER_LINE]
            yield f"acl {ALLOWED_CIDRS_ACL} src {' '.join(chunk)}"
        yield f"tcp-request connection reject unless {ALLOWED_CIDRS_ACL}"
    if fe.reject_all:
        yield "tcp-request connection reject"
    if fe.mode == "http":
        # On reload, answer an in-flight keep-alive request before closing the connection,
        # rather than closing idle keep-alive connections under a client about to reuse them.
        yield "option idle-close-on-response"
    if fe.forward_for:
        yield "option forwardfor"
    for acl in fe.acls:
        words = [f"acl {acl.name} {acl.fetch}", *acl.flags]
        if acl.pattern is not None:
            words += ["--", quoted(acl.pattern)]
        yield " ".join(words)
    for deny in fe.denies:
        yield f"http-request deny deny_status {deny.status}{_if(deny.condition)}"
    for header in fe.header_insertions:
        yield f"http-request set-header {header.name} {header.value_format}"
    for header in fe.response_headers:
        yield f"http-response set-header {header.name} {header.value_format}"
    if fe.prometheus_exporter:
        yield "http-request use-service prometheus-exporter if { path /metrics }"
        yield "http-request return status 404"
    for redirect in fe.redirects:
        yield (
            f"redirect {redirect.kind} {quoted(redirect.target)} code {redirect.code}"
            f"{_if(redirect.condition)}"
        )
    for switch in fe.switches:
        yield f"use_backend {switch.backend}{_if(switch.condition)}"
    if fe.default_backend is not None:
        yield f"default_backend {fe.default_backend}"


def _if(condition: tuple[AclTerm, ...]) -> str:
    if not condition:
        return ""
    return " if " + " ".join(("!" if term.negated else "") + term.acl for term in condition)


def _backend_lines(be: Backend) -> Iterator[str]:
    yield from (f"# {note}" for note in be.notes)
    yield f"mode {be.mode}"
    if not be.enabled:
        yield "disabled"
    yield f"balance {be.balance}"
    if be.consistent_hashing:
        yield "hash-type consistent"
    yield f"timeout connect {duration(be.timeout_connect_ms)}"
    yield f"timeout server {duration(be.timeout_server_ms)}"
    if be.persistence is not None:
        yield from _persistence_lines(be.persistence)
    if be.health_check is not None:
        yield from _check_lines(be.health_check)
    for server in be.servers:
        yield _server_line(server, be.health_check, be.server_tls)


def _persistence_lines(persistence: Persistence) -> Iterator[str]:
    if isinstance(persistence, SourceStickiness):
        yield (
            f"stick-table type {persistence.table_type} size {STICK_TABLE_SIZE}"
            f" expire {duration(persistence.expire_s * 1000)}{_peers_word(persistence.peers)}"
        )
        yield "stick on src"
    elif isinstance(persistence, CookieInsertion):
        yield f"cookie {persistence.cookie_name} insert indirect nocache"
    elif isinstance(persistence, AppCookieStickiness):
        yield (
            f"stick-table type string len {APP_COOKIE_KEY_LENGTH} size {STICK_TABLE_SIZE}"
            f" expire {duration(persistence.expire_s * 1000)}{_peers_word(persistence.peers)}"
        )
        yield f"stick store-response res.cook({persistence.cookie_name})"
        yield f"stick match req.cook({persistence.cookie_name})"
    else:
        assert_never(persistence)


def _peers_word(peers: str | None) -> str:
    return "" if peers is None else f" peers {peers}"


def _check_lines(check: HealthCheck) -> Iterator[str]:
    if check.timeout_ms is not None:
        yield f"timeout check {duration(check.timeout_ms)}"
    if check.http is not None:
        http = check.http
        send = f"http-check send meth {http.method} uri {quoted(http.uri)} ver {http.version}"
        if http.host is not None:
            send += f" hdr Host {quoted(log_format_literal(http.host))}"
        yield "option httpchk"
        yield send
        yield f"http-check expect status {http.expect_status}"
    if check.external_command is not None:
        yield "option external-check"
        yield f"external-check path {quoted(EXTERNAL_CHECK_PATH)}"
        yield f"external-check command {quoted(check.external_command)}"


def _server_line(server: Server, check: HealthCheck | None, tls: tuple[str, ...] = ()) -> str:
    words = [
        f"server {server.name} {address_port_word(server.address, server.port)}",
        f"weight {server.weight}",
    ]
    if server.backup:
        words.append("backup")
    if not server.enabled:
        words.append("disabled")
    if server.cookie is not None:
        words.append(f"cookie {server.cookie}")
    if server.proxy_protocol is not None:
        words.append(str(server.proxy_protocol))
    if server.cut_when_down:
        words.append("on-marked-down shutdown-sessions")
    # Health checks of an ``ssl`` server use its TLS settings (and verification).
    words += tls
    if server.checked and check is not None:
        words.append(
            f"check inter {duration(check.interval_ms)} fall {check.fall} rise {check.rise}"
        )
        if check.tls and not tls:
            words.append("check-ssl verify none")
            if check.sni is not None:
                words.append(f"check-sni {quoted(check.sni)}")
        if server.check_address is not None:
            words.append(f"addr {address_word(server.check_address)}")
        if server.check_port is not None:
            words.append(f"port {server.check_port}")
    return " ".join(words)
