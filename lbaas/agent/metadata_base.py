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
