"""The agent fleet as the control plane sees it: hosts, what they announce, their load.

A host is one ``lbaas agent``: an HTTPS API at ``address:port``, an availability zone
(Octavia's ``compute_zone``), a capacity in amphorae, and a status kept by its heartbeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lbaas.model.enums import HostStatus

HOST_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
"""A host id is one DNS label: it is also the name its certificate is checked against."""

AGENT_NAME_SUFFIX = ".agents.lbaas"
LEGACY_HOST_ID = "local"
"""The host id of ``lbaas serve``'s own agent."""


def valid_host_id(host_id: str) -> bool:
    return re.match(HOST_ID_PATTERN, host_id) is not None


def agent_server_name(host_id: str) -> str:
    """The DNS name an agent's certificate must carry for the controller to talk to it."""
    return f"{host_id}{AGENT_NAME_SUFFIX}"


@dataclass(frozen=True)
class HostAddress:
    """Where to reach one host's agent, and the name its certificate must carry."""

    host_id: str
    address: str
    port: int

    @property
    def base_url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"https://{host}:{self.port}"


@dataclass(frozen=True)
class SilentHost:
    """An UP host whose heartbeats stopped: where its agent was, and when it was heard."""

    host: HostAddress
    last_heard: float


@dataclass(frozen=True)
class HostLoad:
    """A live host as placement sees it: its address, zone, capacity and live amphorae."""

    where: HostAddress
    zone: str
    capacity: int
    amphorae: int

    @property
    def host_id(self) -> str:
        return self.where.host_id

    @property
    def free(self) -> int:
        return self.capacity - self.amphorae


@dataclass(frozen=True)
class HostAnnouncement:
    """What one host heartbeat says: who, where, which zone, how big, what it runs."""

    host_id: str
    address: str
    port: int
    zone: str
    capacity: int
    amphorae: tuple[str, ...]
    vrrp: tuple[tuple[str, str], ...] = ()
    """(amphora id, VRRP state) of its ACTIVE_STANDBY amphorae, as keepalived last said."""
    cert_expiration: float | None = None
    """When the agent's certificate (the amphorae's identity) expires, epoch seconds."""
    wire_version: int | None = None
    """The agent's controller-agent wire version (``lbaas.wire.versions``); None: the
    heartbeat stated none (an agent of version 1)."""


@dataclass(frozen=True)
class HostView:
    """One row of the hosts registry, as operators see it."""

    host_id: str
    address: str
    port: int
    zone: str
    capacity: int
    status: HostStatus
    amphorae: int
    last_heartbeat_at: float | None
    enrolled_at: str
