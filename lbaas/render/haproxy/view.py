"""The HAProxy-shaped view of one load balancer: decisions made, text not yet written.

Rendering is split in two, as Octavia's best part does it. The transform step
(``frontend``, ``backend``, ``l7``, ``healthcheck``, ``config``) reads the graph and decides
everything: which sections exist, their names, modes, limits and rules, what is refused.
The emit step (``emit``) only turns these records into text and owns all the syntax: word
quoting, address formatting, directive order. The view is not a second load-balancer model:
it speaks HAProxy's vocabulary (frontend, backend, server, ACL), is built in one call and
lives only for one render, so tests of the transform can assert on decisions without
parsing text, and goldens show the text a reviewer reads.

Strings in the view are raw: tenant values are quoted by the emitter, never here. Notes are
comments the emitter writes into a section; they are always fixed renderer text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lbaas.render.haproxy.tls import BindTls


class Mode(StrEnum):
    HTTP = "http"
    TCP = "tcp"


class Balance(StrEnum):
    ROUND_ROBIN = "roundrobin"
    LEAST_CONNECTIONS = "leastconn"
    SOURCE = "source"


class ProxyProtocol(StrEnum):
    V1 = "send-proxy"
    V2 = "send-proxy-v2"


class RedirectKind(StrEnum):
    LOCATION = "location"
    PREFIX = "prefix"


@dataclass(frozen=True)
class GlobalSection:
    maxconn: int
    runtime_socket: str
    server_state_file: str
    user: str | None = None
    group: str | None = None
    external_checks: bool = False
    hard_stop_after: int | None = None
    local_peer: str | None = None
    access_log_socket: str | None = None


@dataclass(frozen=True)
class Peer:
    name: str
    address: str
    port: int


@dataclass(frozen=True)
class PeersSection:
    """``peers <name>``: HAProxys that push their stick tables to each other."""

    name: str
    peers: tuple[Peer, ...]


@dataclass(frozen=True)
class Acl:
    """``acl <name> <fetch> <flags> -- <pattern>``; no pattern for boolean fetches.

    ``fetch`` is written as it is (its arguments were checked); ``pattern`` is quoted.
    """

    name: str
    fetch: str
    flags: tuple[str, ...] = ()
    pattern: str | None = None


@dataclass(frozen=True)
class AclTerm:
    acl: str
    negated: bool = False


@dataclass(frozen=True)
class DenyRule:
    status: int
    condition: tuple[AclTerm, ...]


@dataclass(frozen=True)
class RedirectRule:
    kind: RedirectKind
    target: str
    code: int
    condition: tuple[AclTerm, ...]


@dataclass(frozen=True)
class BackendSwitch:
    backend: str
    condition: tuple[AclTerm, ...]


@dataclass(frozen=True)
class HeaderInsertion:
    """``http-request set-header <name> <value>``; the value is a renderer-made log-format."""

    name: str
    value_format: str


@dataclass(frozen=True)
class Frontend:
    name: str
    mode: Mode
    bind_address: str
    port: int
    enabled: bool
    maxconn: int
    timeout_client_ms: int
    inspect_delay_ms: int | None = None
    allowed_cidrs: tuple[str, ...] = ()
    reject_all: bool = False
    prometheus_exporter: bool = False
    forward_for: bool = False
    header_insertions: tuple[HeaderInsertion, ...] = ()
    acls: tuple[Acl, ...] = ()
    denies: tuple[DenyRule, ...] = ()
    redirects: tuple[RedirectRule, ...] = ()
    switches: tuple[BackendSwitch, ...] = ()
    default_backend: str | None = None
    notes: tuple[str, ...] = ()
    tls: BindTls | None = None
    response_headers: tuple[HeaderInsertion, ...] = ()
    log_format: str | None = None


@dataclass(frozen=True)
class SourceStickiness:
    """``stick on src``: a client address keeps its server."""

    table_type: str
    expire_s: int
    peers: str | None = None


@dataclass(frozen=True)
class CookieInsertion:
    """``cookie <name> insert``: HAProxy sets a cookie naming the server."""

    cookie_name: str


@dataclass(frozen=True)
class AppCookieStickiness:
    """The application's own cookie, learnt from responses and matched on requests.

    ``cookie_name`` goes inside ``req.cook(...)``, so it was checked by ``fetch_argument``.
    """

    cookie_name: str
    expire_s: int
    peers: str | None = None


Persistence = SourceStickiness | CookieInsertion | AppCookieStickiness


@dataclass(frozen=True)
class HttpCheck:
    method: str
    uri: str
    version: str
    host: str | None
    expect_status: str


@dataclass(frozen=True)
class HealthCheck:
    """How servers of a backend are checked; the server lines carry ``check``."""

    interval_ms: int
    timeout_ms: int | None
    rise: int
    fall: int
    http: HttpCheck | None = None
    tls: bool = False
    sni: str | None = None
    external_command: str | None = None


@dataclass(frozen=True)
class Server:
    name: str
    address: str
    port: int
    weight: int
    backup: bool = False
    enabled: bool = True
    checked: bool = False
    check_address: str | None = None
    check_port: int | None = None
    proxy_protocol: ProxyProtocol | None = None
    cookie: str | None = None
    # The pool's member-down policy is ``cut``: HAProxy closes the server's connections
    # the moment a check marks it down.
    cut_when_down: bool = False


@dataclass(frozen=True)
class Backend:
    name: str
    mode: Mode
    enabled: bool
    balance: Balance
    consistent_hashing: bool
    timeout_connect_ms: int
    timeout_server_ms: int
    persistence: Persistence | None = None
    health_check: HealthCheck | None = None
    servers: tuple[Server, ...] = ()
    notes: tuple[str, ...] = ()
    #: The ``ssl …`` words of every server line (re-encryption to members), if any.
    server_tls: tuple[str, ...] = ()


@dataclass(frozen=True)
class HaproxyConfig:
    """Everything one HAProxy process serving one load balancer is configured with."""

    load_balancer_id: str
    global_section: GlobalSection
    frontends: tuple[Frontend, ...]
    backends: tuple[Backend, ...]
    peers: PeersSection | None = None
