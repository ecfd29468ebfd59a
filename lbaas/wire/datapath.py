"""The parts of an amphora spec for its kernel data path (netns mode), beside HAProxy's.

``VipFilter`` says what the VIP leg lets in: the ports of the amphora's listeners, ICMP,
and the extra peers and IP protocols an amphora pair needs (VRRP, protocol 112, between the
two amphorae of an ACTIVE_STANDBY load balancer); everything else arriving on the VIP leg
is dropped. ``UdpListener`` is one UDP listener balanced by the L4 engine (``lbaas.l4``)
inside the amphora's namespace, with its pool's members that may get new flows and the
pool's health monitor, which the agent runs from inside the namespace.

Like ``wire``, this module imports nothing from the agent but the other wire module
(``wire_l4``, for the monitor): the controller imports it.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lbaas.wire.l4 import L4MonitorSpec, MemberDown

VRRP_PROTOCOL = 112
#: Port HAProxy's peers listen on, on each amphora's VRRP address (Octavia uses 1025): the
#: pair's HAProxies sync their stick tables over it, and the health manager asks a silent
#: amphora of a pair on it whether its HAProxy lives (``lbaas.health.pair_probe``).
HAPROXY_PEER_PORT = 1025
#: Largest L4 table a spec may ask for (the engine loads 65537 slots in seconds).
MAX_TABLE_SIZE = 1_310_723


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _is_prime(number: int) -> bool:
    if number < 2:
        return False
    return all(number % divisor for divisor in range(2, int(number**0.5) + 1))


class ListenerPort(_Wire):
    """A port the VIP accepts because a listener serves it."""

    protocol: Literal["tcp", "udp"]
    port: int = Field(ge=1, le=65535)
    allowed_cidrs: tuple[str, ...] = Field(
        (), description="Sources allowed to reach this port (empty: any)."
    )

    @model_validator(mode="after")
    def _check(self) -> ListenerPort:
        for cidr in self.allowed_cidrs:
            ipaddress.ip_network(cidr, strict=False)
        return self


class AllowedPeer(_Wire):
    """Traffic of one IP protocol from one address that the VIP leg lets in (e.g. VRRP)."""

    address: str
    protocol: int = Field(VRRP_PROTOCOL, ge=0, le=255, description="IP protocol number.")

    @model_validator(mode="after")
    def _check(self) -> AllowedPeer:
        ipaddress.ip_address(self.address)
        return self


class VipFilter(_Wire):
    """What the VIP leg of a netns amphora accepts; the rest is dropped."""

    listener_ports: tuple[ListenerPort, ...] = ()
    peers: tuple[AllowedPeer, ...] = Field(
        (), description="Extra sources and protocols (the VRRP peer of a pair)."
    )


class UdpMember(_Wire):
    """A member of a UDP listener's pool that may get new flows (admin up, weight > 0)."""

    key: str = Field(min_length=1, description="The member id (its stable Maglev key).")
    address: str
    port: int = Field(ge=1, le=65535)
    weight: int = Field(1, ge=1, le=256)
    backup: bool = Field(False, description="New flows only while no primary is healthy.")
    monitor_address: str | None = Field(None, description="Where to probe it, if not address.")
    monitor_port: int | None = Field(None, ge=1, le=65535)

    @model_validator(mode="after")
    def _check(self) -> UdpMember:
        if ipaddress.ip_address(self.address).version != 4:
            raise ValueError(f"member {self.key}: the L4 engine balances IPv4 only")
        if self.monitor_address is not None:
            ipaddress.ip_address(self.monitor_address)
        return self


class UdpListener(_Wire):
    """One UDP listener balanced in the kernel inside the amphora's namespace."""

    listener_id: str = Field(min_length=1)
    pool_id: str | None = None
    port: int = Field(ge=1, le=65535)
    hash_key: Literal["five_tuple", "source_address"] = "five_tuple"
    source_prefix: int | None = Field(
        None, ge=0, le=32, description="SOURCE_IP granularity as a prefix length (32: host)."
    )
    table_size: int = Field(ge=2, le=MAX_TABLE_SIZE)
    members: tuple[UdpMember, ...] = ()
    monitor: L4MonitorSpec | None = Field(
        None, description="The pool's health monitor, if admin up (None: members unchecked)."
    )
    member_down: MemberDown = Field(
        "keep",
        description="The pool's member-down policy (``wire.l4.L4ListenerSpec``'s); left out "
        "of the JSON when keep, so agents that predate it read the spec.",
    )
    connection_limit: int | None = Field(
        None, ge=1, description="The most flows at once (None: no limit); more are dropped."
    )
    idle_timeout: int | None = Field(
        None,
        ge=1,
        le=2_073_600,
        description="Seconds a flow may stay idle before the kernel forgets it (None: the "
        "kernel's own UDP timeouts).",
    )

    @model_validator(mode="after")
    def _check(self) -> UdpListener:
        if not _is_prime(self.table_size):
            raise ValueError(f"UDP listener {self.listener_id}: table_size must be prime")
        if len({m.key for m in self.members}) != len(self.members):
            raise ValueError(f"UDP listener {self.listener_id}: member keys repeat")
        return self


def check_unique_ports(listeners: tuple[UdpListener, ...]) -> None:
    """Two UDP listeners of one amphora never share a port (the API refuses it too)."""
    ports = [listener.port for listener in listeners]
    if len(set(ports)) != len(ports):
        raise ValueError("two UDP listeners on the same port")
