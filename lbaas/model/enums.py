"""Enumerations of the load-balancer domain.

Every vocabulary the API, the database, converge and the providers share lives here as a
``StrEnum`` so that a typo is a type error rather than a silent mismatch. The values are
exactly the strings of Octavia's v2 API, so they can be stored and sent as they are.
"""

from __future__ import annotations

from enum import StrEnum


class ProvisioningStatus(StrEnum):
    ACTIVE = "ACTIVE"
    PENDING_CREATE = "PENDING_CREATE"
    PENDING_UPDATE = "PENDING_UPDATE"
    PENDING_DELETE = "PENDING_DELETE"
    ERROR = "ERROR"
    DELETED = "DELETED"

    @property
    def is_pending(self) -> bool:
        return self.startswith("PENDING_")


# The one vocabulary of "is this object still there?". ``DELETED`` objects are only kept as
# stubs; ``PENDING_DELETE`` ones still exist but are no longer part of the desired state,
# so converge leaves them out of the graph and settle removes them. Stored statuses are
# plain strings, which compare and hash equal to these members, so ``row.status in
# GONE_STATUSES`` works on a string read from the database.
GONE_STATUSES = frozenset({ProvisioningStatus.PENDING_DELETE, ProvisioningStatus.DELETED})
LIVE_STATUSES = frozenset(ProvisioningStatus) - GONE_STATUSES
# Everything but the stubs: what lists, quotas and lookups count as existing.
EXISTING_STATUSES = frozenset(ProvisioningStatus) - {ProvisioningStatus.DELETED}
# Changes a converge is still to make (a failed converge turns these to ERROR).
PENDING_CHANGE_STATUSES = frozenset(
    {ProvisioningStatus.PENDING_CREATE, ProvisioningStatus.PENDING_UPDATE}
)


def is_live(provisioning_status: str) -> bool:
    """Whether an object with this stored status belongs to the desired state."""
    return provisioning_status not in GONE_STATUSES


class OperatingStatus(StrEnum):
    ONLINE = "ONLINE"
    DRAINING = "DRAINING"
    OFFLINE = "OFFLINE"
    DEGRADED = "DEGRADED"
    ERROR = "ERROR"
    NO_MONITOR = "NO_MONITOR"


class ListenerProtocol(StrEnum):
    HTTP = "HTTP"
    HTTPS = "HTTPS"
    TCP = "TCP"
    TERMINATED_HTTPS = "TERMINATED_HTTPS"
    UDP = "UDP"
    SCTP = "SCTP"
    PROMETHEUS = "PROMETHEUS"

    @property
    def l4_family(self) -> str:
        """The transport a listener of this protocol binds (port uniqueness is per family)."""
        if self is ListenerProtocol.UDP:
            return "UDP"
        if self is ListenerProtocol.SCTP:
            return "SCTP"
        return "TCP"


class PoolProtocol(StrEnum):
    HTTP = "HTTP"
    HTTPS = "HTTPS"
    TCP = "TCP"
    PROXY = "PROXY"
    PROXYV2 = "PROXYV2"
    UDP = "UDP"
    SCTP = "SCTP"


class LbAlgorithm(StrEnum):
    ROUND_ROBIN = "ROUND_ROBIN"
    LEAST_CONNECTIONS = "LEAST_CONNECTIONS"
    SOURCE_IP = "SOURCE_IP"
    SOURCE_IP_PORT = "SOURCE_IP_PORT"
    # lbaas extension: a Maglev table keyed by the 5-tuple, in the kernel (lbaas.l4).
    # Offered only by providers that list it in their capabilities.
    MAGLEV = "MAGLEV"


# Values lbaas adds to Octavia's enumerations. They are accepted where a provider offers
# them, but an error listing the allowed values names Octavia's alone, word for word, so
# a client matching Octavia's message (openstacksdk's checks do) sees it unchanged.
EXTENSION_VALUES: frozenset[str] = frozenset({LbAlgorithm.MAGLEV.value})


class MemberDownPolicy(StrEnum):
    """lbaas extension (a pool's ``lbaas_member_down_policy``): what happens to a member's
    established connections when its health monitor marks it down. Each provider declares
    the values each pool protocol takes (``ProviderCapabilities.member_down_policies``)."""

    KEEP = "keep"  # they go on until they end (every data plane's default)
    CUT = "cut"  # they are closed at once (connection-oriented protocols)
    REROUTE = "reroute"  # their next packets go to a healthy member (datagram flows)


class PersistenceType(StrEnum):
    SOURCE_IP = "SOURCE_IP"
    HTTP_COOKIE = "HTTP_COOKIE"
    APP_COOKIE = "APP_COOKIE"


class HealthMonitorType(StrEnum):
    HTTP = "HTTP"
    HTTPS = "HTTPS"
    PING = "PING"
    TCP = "TCP"
    TLS_HELLO = "TLS-HELLO"
    UDP_CONNECT = "UDP-CONNECT"
    SCTP = "SCTP"


class HttpMethod(StrEnum):
    GET = "GET"
    HEAD = "HEAD"
    POST = "POST"
    PUT = "PUT"
    DELETE = "DELETE"
    TRACE = "TRACE"
    OPTIONS = "OPTIONS"
    CONNECT = "CONNECT"
    PATCH = "PATCH"


class L7PolicyAction(StrEnum):
    REJECT = "REJECT"
    REDIRECT_TO_URL = "REDIRECT_TO_URL"
    REDIRECT_TO_POOL = "REDIRECT_TO_POOL"
    REDIRECT_PREFIX = "REDIRECT_PREFIX"


class L7RuleType(StrEnum):
    HOST_NAME = "HOST_NAME"
    PATH = "PATH"
    FILE_TYPE = "FILE_TYPE"
    HEADER = "HEADER"
    COOKIE = "COOKIE"
    SSL_CONN_HAS_CERT = "SSL_CONN_HAS_CERT"
    SSL_VERIFY_RESULT = "SSL_VERIFY_RESULT"
    SSL_DN_FIELD = "SSL_DN_FIELD"


class L7CompareType(StrEnum):
    REGEX = "REGEX"
    STARTS_WITH = "STARTS_WITH"
    ENDS_WITH = "ENDS_WITH"
    CONTAINS = "CONTAINS"
    EQUAL_TO = "EQUAL_TO"


class ClientAuthentication(StrEnum):
    NONE = "NONE"
    OPTIONAL = "OPTIONAL"
    MANDATORY = "MANDATORY"


class Topology(StrEnum):
    SINGLE = "SINGLE"
    ACTIVE_STANDBY = "ACTIVE_STANDBY"


class AmphoraStatus(StrEnum):
    BOOTING = "BOOTING"
    ALLOCATED = "ALLOCATED"
    READY = "READY"
    PENDING_CREATE = "PENDING_CREATE"
    PENDING_DELETE = "PENDING_DELETE"
    DELETED = "DELETED"
    ERROR = "ERROR"
    FAILOVER_STOPPED = "FAILOVER_STOPPED"


# Amphorae that serve (or are being made to serve) a load balancer, and those on their way out.
LIVE_AMPHORA_STATUSES = frozenset(
    {
        AmphoraStatus.ALLOCATED,
        AmphoraStatus.READY,
        AmphoraStatus.BOOTING,
        AmphoraStatus.PENDING_CREATE,
    }
)
GONE_AMPHORA_STATUSES = frozenset({AmphoraStatus.PENDING_DELETE, AmphoraStatus.DELETED})


class HostStatus(StrEnum):
    """An agent host of the fleet: heard from recently (UP) or not (DOWN)."""

    UP = "UP"
    DOWN = "DOWN"


class NetworkResourceStatus(StrEnum):
    """The Networking API's status of a network or port (Neutron's vocabulary, not lbaas's).

    lbaas's registry keeps no state for them, so every network and port it serves is ACTIVE.
    """

    ACTIVE = "ACTIVE"


class AmphoraRole(StrEnum):
    STANDALONE = "STANDALONE"
    MASTER = "MASTER"
    BACKUP = "BACKUP"


# Which pool protocols a listener of each protocol may use as its default or redirect pool.
LISTENER_POOL_COMPATIBILITY: dict[ListenerProtocol, frozenset[PoolProtocol]] = {
    ListenerProtocol.HTTP: frozenset({PoolProtocol.HTTP, PoolProtocol.PROXY, PoolProtocol.PROXYV2}),
    ListenerProtocol.HTTPS: frozenset(
        {PoolProtocol.HTTPS, PoolProtocol.PROXY, PoolProtocol.PROXYV2, PoolProtocol.TCP}
    ),
    ListenerProtocol.TCP: frozenset(
        {
            PoolProtocol.HTTP,
            PoolProtocol.HTTPS,
            PoolProtocol.PROXY,
            PoolProtocol.PROXYV2,
            PoolProtocol.TCP,
        }
    ),
    ListenerProtocol.TERMINATED_HTTPS: frozenset(
        {PoolProtocol.HTTP, PoolProtocol.PROXY, PoolProtocol.PROXYV2}
    ),
    ListenerProtocol.UDP: frozenset({PoolProtocol.UDP}),
    ListenerProtocol.SCTP: frozenset({PoolProtocol.SCTP}),
    ListenerProtocol.PROMETHEUS: frozenset(),
}

# Health monitor types allowed per pool protocol.
_STREAM_HM_TYPES = frozenset(
    {
        HealthMonitorType.HTTP,
        HealthMonitorType.HTTPS,
        HealthMonitorType.PING,
        HealthMonitorType.TCP,
        HealthMonitorType.TLS_HELLO,
    }
)
_DATAGRAM_HM_TYPES = frozenset(
    {
        HealthMonitorType.UDP_CONNECT,
        HealthMonitorType.SCTP,
        HealthMonitorType.TCP,
        HealthMonitorType.HTTP,
    }
)
POOL_HEALTH_MONITOR_TYPES: dict[PoolProtocol, frozenset[HealthMonitorType]] = {
    PoolProtocol.HTTP: _STREAM_HM_TYPES,
    PoolProtocol.HTTPS: _STREAM_HM_TYPES,
    PoolProtocol.PROXY: _STREAM_HM_TYPES,
    PoolProtocol.PROXYV2: _STREAM_HM_TYPES,
    PoolProtocol.TCP: _STREAM_HM_TYPES,
    PoolProtocol.UDP: _DATAGRAM_HM_TYPES,
    PoolProtocol.SCTP: _DATAGRAM_HM_TYPES,
}


class WatchEventType(StrEnum):
    """Kubernetes watch event types (``lbaas kubernetes``); two share a status's spelling,
    which is why they live here."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"
