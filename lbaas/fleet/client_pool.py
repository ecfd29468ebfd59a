"""One ``AgentClient`` per agent host, made on first use and kept.

The amphora provider (and the health manager's stale-amphora cleaner) talk to many agents;
each client holds a connection pool, so they are cached per (host id, address, port): a
host that moved gets a new client, the old one is closed. Every client checks that the
agent's certificate names the host it was asked for (``agent_server_name``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx

from lbaas.certs.authority import TlsFiles
from lbaas.fleet.client import AgentClient
from lbaas.fleet.peer_versions import PeerVersions
from lbaas.model.fleet import HostAddress, agent_server_name

ClientFactory = Callable[[HostAddress], AgentClient]

CONNECT_TIMEOUT = 3.0
"""Seconds to reach an agent: a lost host must not hold a failover for long."""
HANDSHAKE_TIMEOUT = 20.0
"""Seconds for the TLS handshake of a host that accepted the connection: an agent
restarting behind its service manager's socket answers a waiting converge within it."""


def tls_client_factory(
    tls: TlsFiles,
    timeout: float = 30.0,
    handshake_timeout: float | None = HANDSHAKE_TIMEOUT,
    versions: PeerVersions | None = None,
) -> ClientFactory:
    """Clients with the controller's certificate, checking the host's name;
    ``handshake_timeout`` None: the handshake too within ``CONNECT_TIMEOUT``;
    ``versions``: told each host's wire version (``peer_versions``)."""

    def make(host: HostAddress) -> AgentClient:
        return AgentClient(
            host.base_url,
            tls=tls,
            timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT),
            server_name=agent_server_name(host.host_id),
            handshake_timeout=handshake_timeout,
            peer=host.host_id,
            versions=versions,
        )

    return make


class AgentPool:
    """Cached clients per host, plus the one configured agent for amphorae with no host."""

    def __init__(
        self,
        factory: ClientFactory,
        legacy: AgentClient,
        fresh: ClientFactory | None = None,
        versions: PeerVersions | None = None,
    ) -> None:
        """``fresh``: what makes ``fresh``'s clients (default ``factory``); ``versions``:
        what the factories' clients record the agents' wire versions in."""
        self.versions = versions if versions is not None else PeerVersions()
        self._factory = factory
        self._fresh = fresh or factory
        self._legacy = legacy
        self._clients: dict[str, tuple[HostAddress, AgentClient]] = {}
        self._lock = threading.Lock()

    def client(self, host: HostAddress | None) -> AgentClient:
        """The client of ``host``'s agent (the configured one for None)."""
        if host is None:
            return self._legacy
        with self._lock:
            known = self._clients.get(host.host_id)
            if known is not None and known[0] == host:
                return known[1]
            client = self._factory(host)
            self._clients[host.host_id] = (host, client)
        if known is not None:
            known[1].close()
        return client

    def fresh(self, host: HostAddress) -> AgentClient:
        """A new client of ``host``'s agent, not kept (the caller closes it): its first
        request opens a new connection. A connection kept in the pool skips the connect,
        so to a host that went silent since (a lost or partitioned one) a request waits
        the whole read timeout (30 s) where a new connection fails its connect within
        ``CONNECT_TIMEOUT``."""
        return self._fresh(host)

    def close(self) -> None:
        with self._lock:
            clients = [client for _, client in self._clients.values()]
            self._clients.clear()
        for client in clients:
            client.close()
        self._legacy.close()
