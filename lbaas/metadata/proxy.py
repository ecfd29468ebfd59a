"""The agent's part of the metadata proxy: identify the instance, sign, forward.

A request reaches the agent from a per-network HAProxy, which adds the network's id and
the instance's source address (``X-Forwarded-For``). Tenant address ranges overlap, so
the (network, source address) pair is what names the port and so the instance. The agent
drops every identity header the client sent (``X-Instance-ID*``, ``X-Tenant-ID``), adds
the instance id, its HMAC-SHA256 signature and the project, and forwards to the metadata
service; a source that matches no port is answered 404 and logged, never forwarded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from lbaas.metadata import signing
from lbaas.metadata.base import (
    BoundPort,
    PortView,
    RegistryUnavailable,
    Upstream,
    UpstreamReply,
)

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

# Hop-by-hop and routing headers that are the proxy's, not the client's, to set.
_DROPPED = {
    "host",
    "connection",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "keep-alive",
}


class StaticPortView:
    """A port view held in memory: the agent's copy of the ports bound to its host."""

    def __init__(self, ports: Iterable[BoundPort] = ()) -> None:
        self._ports = {(p.network_id, p.ip_address): p for p in ports}

    def replace(self, ports: Iterable[BoundPort]) -> None:
        """Swap in a new full view (a full sync) in one assignment."""
        self._ports = {(p.network_id, p.ip_address): p for p in ports}

    def port_at(self, network_id: str, address: str) -> BoundPort | None:
        return self._ports.get((network_id, address))


def bound_ports(documents: Iterable[Mapping[str, Any]]) -> list[BoundPort]:
    """The view of a Networking API port list (``GET /v2.0/ports``): one entry per address
    of every port that belongs to an instance (has a device and a project)."""
    return [
        BoundPort(doc["network_id"], fixed["ip_address"], doc["device_id"], doc["project_id"])
        for doc in documents
        if doc.get("device_id") and doc.get("project_id")
        for fixed in doc.get("fixed_ips", [])
    ]


def signed_headers(
    incoming: Mapping[str, str], port: BoundPort, source: str, secret: bytes
) -> dict[str, str]:
    """The headers to forward: the client's minus identity and hop headers, plus ours."""
    headers = {
        name: value
        for name, value in incoming.items()
        if not signing.is_identity_header(name)
        and name.lower() not in _DROPPED
        and name.lower() != signing.FORWARDED_FOR.lower()
    }
    headers[signing.INSTANCE_ID] = port.device_id
    headers[signing.SIGNATURE] = signing.sign(secret, port.device_id)
    headers[signing.TENANT_ID] = port.project_id
    headers[signing.FORWARDED_FOR] = source
    return headers


class MetadataForwarder:
    def __init__(self, ports: PortView, secret: bytes, upstream: Upstream) -> None:
        self._ports = ports
        self._secret = secret
        self._upstream = upstream

    def handle(
        self, network_id: str, source: str, method: str, path: str, headers: Mapping[str, str]
    ) -> UpstreamReply:
        port = self._ports.port_at(network_id, source)
        if port is None or not port.device_id:
            log.warning("metadata request from %s on network %s: no port", source, network_id)
            return UpstreamReply(404, {"content-type": "text/plain"}, b"404 Not Found\n")
        forwarded = signed_headers(headers, port, source, self._secret)
        return self._upstream.send(method, path, forwarded)


def _http_client(base_url: str, timeout: float) -> httpx.Client:
    # httpx (which pulls in rich and pygments for its CLI) only when a metadata proxy is
    # configured: it costs every agent ~1 s of start-up under load.
    import httpx

    return httpx.Client(base_url=base_url, timeout=timeout)


class HttpUpstream:
    """The metadata service over HTTP: lbaas's own, or a Nova metadata API."""

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self._client = _http_client(base_url, timeout)

    def send(self, method: str, path: str, headers: Mapping[str, str]) -> UpstreamReply:
        reply = self._client.request(method, path, headers=dict(headers))
        kept = {k: v for k, v in reply.headers.items() if k.lower() not in _DROPPED}
        return UpstreamReply(reply.status_code, kept, reply.content)

    def close(self) -> None:
        self._client.close()


class Credentials(Protocol):
    """A token for the API, kept until it is near its end or ``invalidate`` is called;
    ``RegistryUnavailable`` when none can be had."""

    def get_token(self) -> str | None: ...

    def invalidate(self) -> bool: ...

    def close(self) -> None: ...


class HttpPortSource:
    """The control plane's port registry: ``GET /v2.0/ports?binding:host_id=<host>``, with
    a token of ``credentials`` when the API validates Keystone tokens (a 401 fetches a
    new token and asks once more: the old one may have been revoked)."""

    def __init__(
        self, base_url: str, timeout: float = 10.0, credentials: Credentials | None = None
    ) -> None:
        self._client = _http_client(base_url, timeout)
        self._credentials = credentials

    def ports_of_host(self, host_id: str) -> list[BoundPort]:
        import httpx  # loaded already by _http_client

        try:
            reply = self._ask(host_id)
            if reply.status_code == 401 and self._credentials is not None:
                self._credentials.invalidate()
                reply = self._ask(host_id)
            reply.raise_for_status()
            documents = reply.json()["ports"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise RegistryUnavailable(str(exc)) from exc
        return bound_ports(d for d in documents if d.get("binding:host_id") == host_id)

    def _ask(self, host_id: str) -> httpx.Response:
        headers = {}
        if self._credentials is not None:
            headers["X-Auth-Token"] = self._credentials.get_token() or ""
        params = {"binding:host_id": host_id}
        return self._client.get("/v2.0/ports", params=params, headers=headers)

    def close(self) -> None:
        self._client.close()
        if self._credentials is not None:
            self._credentials.close()
