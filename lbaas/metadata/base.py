"""What the agent's metadata proxy needs from outside: the port registry and an upstream.

Interfaces so the signing part runs against fakes in unit tests and against the control
plane's port registry and a real HTTP upstream (lbaas's metadata service or Nova's) in
production and end-to-end tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class BoundPort:
    """The registry's view of one port, as much as identifying an instance needs."""

    network_id: str
    ip_address: str
    device_id: str
    project_id: str


class PortView(Protocol):
    def port_at(self, network_id: str, address: str) -> BoundPort | None:
        """The port holding ``address`` on the network, if any."""
        ...


@dataclass(frozen=True)
class UpstreamReply:
    status: int
    headers: Mapping[str, str]
    body: bytes


class Upstream(Protocol):
    def send(self, method: str, path: str, headers: Mapping[str, str]) -> UpstreamReply:
        """Forward one metadata request (no body: metadata requests are GETs)."""
        ...


class RegistryUnavailable(Exception):
    """The control plane's port registry could not be read (down, unreachable, refusing)."""


class PortSource(Protocol):
    def ports_of_host(self, host_id: str) -> list[BoundPort]:
        """Every instance port bound to ``host_id``; raises RegistryUnavailable."""
        ...


class ProxyHost(Protocol):
    """The metadata proxies on this host: one namespace and HAProxy per network."""

    def present(self) -> set[str]:
        """Networks whose proxy namespace exists here (also those a previous agent left)."""
        ...

    def ensure(self, network_id: str) -> None:
        """Create the network's proxy, or repair what is missing of it (idempotent)."""
        ...

    def alive(self, network_id: str) -> bool:
        """Whether the network's proxy HAProxy runs."""
        ...

    def remove(self, network_id: str) -> None:
        """Stop the proxy and delete its namespace (idempotent)."""
        ...
