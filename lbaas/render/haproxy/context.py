"""What the HAProxy renderer needs to know about the place a configuration will run.

The load-balancer graph says what to serve; this context says where: the address HAProxy
binds listeners to, where its runtime socket and state files live, and a few deployment
choices. It is passed explicitly (never read from global settings) so the same graph renders
the same text on the controller and on the agent, and tests can render with fixed paths.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from lbaas.render.haproxy.tls import ListenerTlsFiles, PoolTlsFiles

#: The one ``peers`` section of a configuration (stick tables name it).
PEERS_SECTION = "lbaas_peers"


@dataclass(frozen=True)
class HaproxyPeer:
    """One HAProxy of an ACTIVE_STANDBY pair, as the other one reaches it."""

    name: str
    """Peer name: the amphora id (HAProxy matches the local one with ``localpeer``)."""

    address: str
    """The amphora's own (VRRP) address, never the VIP: both must reach each other always."""

    port: int


@dataclass(frozen=True)
class HaproxyPeers:
    """The pair's HAProxys: stick tables are pushed to the other one as they change."""

    local_name: str
    members: tuple[HaproxyPeer, ...]


@dataclass(frozen=True)
class HaproxyContext:
    """Deployment facts for one HAProxy instance serving one load balancer."""

    bind_address: str
    """The VIP address every listener of the load balancer binds to (e.g. ``127.0.10.5``)."""

    runtime_socket: str
    """Path of the stats/runtime socket, opened at admin level with ``expose-fd listeners``
    so that a master-worker reload hands the listening sockets to the new worker."""

    state_dir: str
    """Directory for files HAProxy reads at start-up (the server-state file)."""

    maxconn_default: int = 50000
    """Frontend ``maxconn`` for listeners whose ``connection_limit`` is -1 (or 0), and the
    process-wide ``maxconn``. HAProxy needs about two descriptors per connection and exits
    at start-up when it cannot raise RLIMIT_NOFILE that far, so without root this must stay
    below about half the hard descriptor limit."""

    user: str | None = None
    """User HAProxy drops privileges to after binding; omitted when None."""

    group: str | None = None
    """Group HAProxy drops privileges to after binding; omitted when None."""

    external_check_script: str | None = None
    """Executable run for PING health monitors (HAProxy has no ICMP check). HAProxy calls it
    with ``<proxy_addr> <proxy_port> <server_addr> <server_port>``; exit status 0 means up.
    When None, a graph with an enabled PING monitor is refused."""

    hard_stop_after: int | None = None
    """Seconds a worker replaced by a reload may drain its connections before it is stopped
    (``hard-stop-after``); None leaves it to the connections."""

    peers: HaproxyPeers | None = None
    """ACTIVE_STANDBY: the pair whose stick tables (SOURCE_IP, APP_COOKIE persistence) are
    kept in step, so the BACKUP already knows every client's member when it takes over;
    None for SINGLE."""

    listener_tls: Mapping[str, ListenerTlsFiles] = field(default_factory=dict)
    """Per TERMINATED_HTTPS listener id, the TLS files its agent writes (certificates,
    client CA, CRL). A terminating listener missing here is refused."""

    pool_tls: Mapping[str, PoolTlsFiles] = field(default_factory=dict)
    """Per ``tls_enabled`` pool id, the client certificate, CA and CRL files (all optional)."""

    minimum_tls_version: str | None = None
    """The operator's floor (``api.minimum_tls_version``), applied to a terminating listener
    that names no ``tls_versions`` (a PROMETHEUS listener: the API fills in no defaults for
    it); a listener's own list is rendered as it is."""

    access_log_socket: str | None = None
    """The agent's UNIX stream socket the access-log ring is forwarded to (one line per
    HTTP request, one per TCP connection: ``access_log``); None logs nothing (Octavia's
    ``connection_logging = False``)."""

    @property
    def server_state_file(self) -> str:
        """Where the agent must write ``show servers state`` before a reload.

        The rendered configuration loads it at start-up, so weights and drain/maintenance
        states set through the runtime API survive the reload (HAProxy keeps the configured
        weight instead whenever the configuration changed it). The file should exist, even
        if it only holds the format version line ``1``, or HAProxy warns at start-up.
        """
        return posixpath.join(self.state_dir, "server-state")
