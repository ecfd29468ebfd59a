"""Pools as HAProxy backends: balancing, persistence, checks and one server per member.

A backend serves every listener that uses its pool, so two of its settings are derived from
those listeners. Its mode is ``http`` when any of them is an HTTP (or TERMINATED_HTTPS)
listener (HAProxy refuses
to send an HTTP frontend to a TCP backend, while a TCP frontend may use an HTTP backend) and
``tcp`` otherwise; its connect and server timeouts are the longest its listeners ask for
(see ``timeouts``).

Members become servers sorted by id, so the text and the server order (which ``balance``
uses) do not depend on the order the graph was built in. Octavia's member states map to
server keywords: weight 0 is HAProxy's weight 0 (no new connections, existing and persisted
ones stay: Octavia's drain), ``backup`` is ``backup``, admin_state_up false is ``disabled``
(maintenance). A pool whose member-down policy is ``cut`` adds ``on-marked-down
shutdown-sessions``: a server a check marks down loses its connections at once. A pool
protocol of PROXY or PROXYV2 adds ``send-proxy``/``send-proxy-v2``; HAProxy then sends the header on checks too unless the member has a monitor address or
port, which is what a separate monitor endpoint wants. HTTPS pools without ``tls_enabled``
are plain TCP to the member.

Persistence: SOURCE_IP is a stick table on the client address (``type ip`` or ``ipv6``
following the VIP's family); HTTP_COOKIE is HAProxy's inserted cookie ``SRV`` whose value is
the member id; APP_COOKIE learns the application's named cookie from responses into a stick
table and matches it on requests, which is what the old ``appsession`` did. Cookies need
HTTP mode: on a TCP-mode backend the cookie types are left out, with a note in the file.
SOURCE_IP balancing uses consistent hashing so that adding or removing a member moves few
clients.
"""

from __future__ import annotations

from typing import assert_never

from lbaas.model.enums import (
    LbAlgorithm,
    ListenerProtocol,
    MemberDownPolicy,
    PersistenceType,
    PoolProtocol,
)
from lbaas.model.graph import Listener, Member, Pool, SessionPersistence
from lbaas.render.haproxy.addresses import is_ipv6, normalised_address
from lbaas.render.haproxy.context import PEERS_SECTION, HaproxyContext
from lbaas.render.haproxy.healthcheck import health_check_of
from lbaas.render.haproxy.names import backend_name, server_name
from lbaas.render.haproxy.quoting import fetch_argument
from lbaas.render.haproxy.timeouts import backend_timeouts_ms
from lbaas.render.haproxy.tls import PoolTlsFiles, server_tls_words
from lbaas.render.haproxy.unsupported import refusal
from lbaas.render.haproxy.view import (
    AppCookieStickiness,
    Backend,
    Balance,
    CookieInsertion,
    HealthCheck,
    Mode,
    Persistence,
    ProxyProtocol,
    Server,
    SourceStickiness,
)

INSERTED_COOKIE_NAME = "SRV"
"""The cookie HAProxy inserts for HTTP_COOKIE persistence."""

DEFAULT_STICKINESS_S = 30 * 60
"""How long an idle client keeps its member under SOURCE_IP and APP_COOKIE persistence.
Octavia's API only accepts persistence_timeout for UDP pools, so this is the usual value."""

MAX_WEIGHT = 256
"""HAProxy's (and Octavia's) largest member weight."""

_BALANCE = {
    LbAlgorithm.ROUND_ROBIN: Balance.ROUND_ROBIN,
    LbAlgorithm.LEAST_CONNECTIONS: Balance.LEAST_CONNECTIONS,
    LbAlgorithm.SOURCE_IP: Balance.SOURCE,
}
_PROXY_PROTOCOL = {PoolProtocol.PROXY: ProxyProtocol.V1, PoolProtocol.PROXYV2: ProxyProtocol.V2}


def backend_of(pool: Pool, users: tuple[Listener, ...], ctx: HaproxyContext) -> Backend:
    """The backend of a pool used by these listeners."""
    mode = backend_mode(users)
    balance = _BALANCE.get(pool.lb_algorithm)
    if balance is None:
        raise refusal(f"The {pool.lb_algorithm} algorithm is not supported by this provider.")
    connect_ms, server_ms = backend_timeouts_ms(users)
    persistence, notes = _persistence(pool.session_persistence, mode, ctx)
    check = health_check_of(pool.health_monitor, ctx)
    cookies = isinstance(persistence, CookieInsertion)
    members = sorted(pool.members, key=lambda member: member.id)
    return Backend(
        name=backend_name(pool.id),
        mode=mode,
        enabled=pool.admin_state_up,
        balance=balance,
        consistent_hashing=balance is Balance.SOURCE,
        timeout_connect_ms=connect_ms,
        timeout_server_ms=server_ms,
        persistence=persistence,
        health_check=check,
        servers=tuple(server_of(member, pool, check, cookies) for member in members),
        notes=notes,
        server_tls=_server_tls(pool, ctx),
    )


def _server_tls(pool: Pool, ctx: HaproxyContext) -> tuple[str, ...]:
    if not pool.tls_enabled:
        return ()
    return tuple(server_tls_words(pool, ctx.pool_tls.get(pool.id, PoolTlsFiles())))


def backend_mode(users: tuple[Listener, ...]) -> Mode:
    """``http`` if any listener using the pool is an HTTP listener, else ``tcp``."""
    http = (ListenerProtocol.HTTP, ListenerProtocol.TERMINATED_HTTPS)
    if any(listener.protocol in http for listener in users):
        return Mode.HTTP
    return Mode.TCP


def server_of(member: Member, pool: Pool, check: HealthCheck | None, cookie: bool) -> Server:
    """The server line of a member of ``pool``."""
    checked = check is not None
    monitor_address = member.monitor_address if checked else None
    return Server(
        name=server_name(member.id),
        address=normalised_address(member.address),
        port=member.protocol_port,
        weight=min(max(member.weight, 0), MAX_WEIGHT),
        backup=member.backup,
        enabled=member.admin_state_up,
        checked=checked,
        check_address=None if monitor_address is None else normalised_address(monitor_address),
        check_port=member.monitor_port if checked else None,
        proxy_protocol=_PROXY_PROTOCOL.get(pool.protocol),
        cookie=member.id if cookie else None,
        cut_when_down=pool.member_down_policy is MemberDownPolicy.CUT,
    )


def _persistence(
    persistence: SessionPersistence | None, mode: Mode, ctx: HaproxyContext
) -> tuple[Persistence | None, tuple[str, ...]]:
    if persistence is None:
        return None, ()
    expire_s = persistence.persistence_timeout or DEFAULT_STICKINESS_S
    peers = None if ctx.peers is None else PEERS_SECTION
    kind = persistence.type
    if kind is PersistenceType.SOURCE_IP:
        table = "ipv6" if is_ipv6(normalised_address(ctx.bind_address)) else "ip"
        return SourceStickiness(table_type=table, expire_s=expire_s, peers=peers), ()
    if mode is Mode.TCP:
        return None, (f"{kind} session persistence needs HTTP mode: not applied.",)
    if kind is PersistenceType.HTTP_COOKIE:
        return CookieInsertion(cookie_name=INSERTED_COOKIE_NAME), ()
    if kind is PersistenceType.APP_COOKIE:
        if not persistence.cookie_name:
            raise refusal("APP_COOKIE session persistence needs a cookie_name.")
        name = fetch_argument(persistence.cookie_name, "cookie name")
        return AppCookieStickiness(cookie_name=name, expire_s=expire_s, peers=peers), ()
    assert_never(kind)
