"""The metadata proxies of one agent put together: socket server, signer, host, sync.

Run only by a netns-mode agent with ``metadata.proxies`` on: the proxies are namespaces
on this host's networks. The signer's port view, the sync's reads and the forwarding all
go to the control plane (``metadata.registry_url``, ``metadata.upstream_url``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from lbaas import service_auth
from lbaas.config import KeystoneAuthtokenSettings, Settings
from lbaas.host.base import HostOps
from lbaas.metadata import signing
from lbaas.metadata.base import RegistryUnavailable
from lbaas.metadata.haproxy_config import MAX_SOCKET_PATH
from lbaas.metadata.namespaces import NetnsProxyHost
from lbaas.metadata.proxy import (
    Credentials,
    HttpPortSource,
    HttpUpstream,
    MetadataForwarder,
    StaticPortView,
)
from lbaas.metadata.server import MetadataSocketServer
from lbaas.metadata.sync import MetadataSync, SyncLoop

log = logging.getLogger(__name__)

SOCKET_NAME = "agent.sock"


def registry_url(settings: Settings) -> str:
    if settings.metadata.registry_url:
        return settings.metadata.registry_url.rstrip("/")
    host = settings.api.host
    host = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.api.port}"


class KeystoneCredentials:
    """The agent's service user at Keystone: keystoneauth1's session keeps its token."""

    def __init__(self, settings: KeystoneAuthtokenSettings) -> None:
        self._session = service_auth.service_session(settings)

    def get_token(self) -> str | None:
        from keystoneauth1 import exceptions as ksa

        try:
            token: str | None = self._session.get_token()
        except ksa.ClientException as exc:  # Keystone down, or the credential refused
            raise RegistryUnavailable(f"no Keystone token: {type(exc).__name__}") from None
        return token

    def invalidate(self) -> bool:
        return bool(self._session.invalidate())

    def close(self) -> None:
        self._session.session.close()  # keystoneauth1's requests session: its sockets


def registry_credentials(settings: Settings) -> Credentials | None:
    """The agent's service user (``[keystone_authtoken]`` in its settings), for an API that
    validates Keystone tokens; None when the section names none."""
    if not service_auth.configured(settings.keystone_authtoken):
        return None
    return KeystoneCredentials(settings.keystone_authtoken)


class MetadataProxies:
    def __init__(self, settings: Settings, host: HostOps, state_dir: Path) -> None:
        root = state_dir / "metadata"
        secret = signing.shared_secret(settings.metadata.shared_secret, state_dir)
        registry = registry_url(settings)
        upstream = (settings.metadata.upstream_url or registry).rstrip("/")
        self.view = StaticPortView()
        self._source = HttpPortSource(registry, credentials=registry_credentials(settings))
        self._upstream = HttpUpstream(upstream)
        forwarder = MetadataForwarder(self.view, secret, self._upstream)
        self.server = MetadataSocketServer(root / SOCKET_NAME, forwarder)
        self.host = NetnsProxyHost(
            host,
            root / "proxies",
            root / SOCKET_NAME,
            namespace_prefix=settings.agent.namespace_prefix,
            bridge_mappings=settings.agent.bridge_mappings,
        )
        self.sync = MetadataSync(self._source, self.host, self.view, settings.agent.host_id)
        self._loop = SyncLoop(self.sync, settings.metadata.sync_interval)
        log.info("metadata proxies: ports from %s, forwarding to %s", registry, upstream)

    def start(self) -> None:
        self.server.start()
        self._loop.start()

    def stop(self) -> None:
        """Stop syncing and serving; the proxies' HAProxy keep running for the next agent."""
        self._loop.stop()
        self.server.stop()
        self._source.close()
        self._upstream.close()


def metadata_proxies(settings: Settings, host: HostOps, state_dir: Path) -> MetadataProxies | None:
    if not settings.metadata.proxies or settings.agent.mode != "netns":
        return None
    socket_path = state_dir / "metadata" / SOCKET_NAME
    if len(str(socket_path).encode()) > MAX_SOCKET_PATH:
        log.error("metadata proxies off: %s is too long for a unix socket", socket_path)
        return None
    return MetadataProxies(settings, host, state_dir)
