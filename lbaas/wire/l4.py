"""The agent's wire format for kernel (L4) services, beside ``wire`` (amphorae).

A node's agent balances the load balancers of the ``distributed`` provider in its own
network namespace with ``lbaas.l4``'s engine and checks their members' health itself.
The controller sends the whole desired service of one load balancer; the agent converges
to it and answers with what it sees. Routes (same errors as ``wire``'s ``ErrorBody``):

    PUT    /v1/l4/{loadbalancer_id}   L4ServiceSpec -> 200 L4ServiceStatus
    GET    /v1/l4/{loadbalancer_id}   -> 200 L4ServiceStatus | 404  (?placement=true: with
                                      the applied Maglev places, see ``placement``)
    DELETE /v1/l4/{loadbalancer_id}   -> 204 (also when it did not exist)

Like ``wire``, this module imports nothing else from the agent, so providers use it alone.

``L4ServiceSpec.spec_format`` names the shape of the spec (``L4_SPEC_FORMAT``), as
``AmphoraSpec.spec_format`` does for amphorae. A spec without it is format 1 (controllers
before the field sent none). An agent refuses a format it does not read, before reading
anything else, with a 400 that names both formats, so a controller newer than its agents
fails loudly instead of being half understood (the converge reports a permanent error).
"""

from __future__ import annotations

import ipaddress
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

L4_PREFIX = "/v1/l4"
L4_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MAX_TABLE_SIZE = 1_310_723
#: The spec format this module writes and reads; bump it when the meaning of a field changes.
L4_SPEC_FORMAT: Final = 1

L4MemberHealth = Literal["UP", "DOWN", "NO_CHECK"]
#: A pool's ``lbaas_member_down_policy`` as the engine's ``LiveFlowPolicy`` takes it.
MemberDown = Literal["keep", "cut", "reroute"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _ipv4(value: str) -> str:
    if ipaddress.ip_address(value).version != 4:
        raise ValueError("the L4 engine balances IPv4 only")
    return value


class L4MemberSpec(_Wire):
    id: str = Field(min_length=1, max_length=64)
    address: str
    port: int = Field(ge=1, le=65535)
    weight: int = Field(ge=0, le=256, description="0: no new flows (draining).")
    backup: bool = Field(False, description="New flows only while no primary is healthy.")
    local: bool = Field(
        False,
        description="On this node's host: while one such primary is healthy, the node "
        "balances only those (a load balancer that prefers local members).",
    )
    monitor_address: str | None = Field(None, description="Where to probe, if not address.")
    monitor_port: int | None = Field(None, ge=1, le=65535, description="Likewise the port.")
    place: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="The Maglev place (permutation key) it holds: a removed member's, "
        "reused; None: its own id.",
    )

    @property
    def place_key(self) -> str:
        return self.id if self.place is None else self.place

    @field_validator("address", "monitor_address")
    @classmethod
    def _address_is_ipv4(cls, value: str | None) -> str | None:
        return None if value is None else _ipv4(value)


class L4MonitorSpec(_Wire):
    """A health monitor in Octavia's terms (times in seconds)."""

    type: Literal["TCP", "UDP-CONNECT", "HTTP", "PING"]
    delay: float = Field(gt=0)
    timeout: float = Field(gt=0)
    max_retries: int = Field(ge=1, le=10, description="Successes in a row to go up (rise).")
    max_retries_down: int = Field(ge=1, le=10, description="Failures in a row to go down.")
    http_method: str = "GET"
    url_path: str = "/"
    expected_codes: str = "200"
    http_version: float = 1.0
    domain_name: str | None = None


class L4TombstoneSpec(_Wire):
    """A removed member's place, kept so that its removal moves only its own slots."""

    place: str = Field(min_length=1, max_length=64)
    weight: int = Field(1, ge=1, le=256)
    backup: bool = False


class L4ListenerSpec(_Wire):
    id: str = Field(min_length=1, max_length=64)
    protocol: Literal["tcp", "udp"]
    port: int = Field(ge=1, le=65535)
    hash_key: Literal["five_tuple", "source_address"]
    table_size: int = Field(ge=3, le=MAX_TABLE_SIZE, description="Maglev table size (prime).")
    members: tuple[L4MemberSpec, ...] = ()
    monitor: L4MonitorSpec | None = None
    tombstones: tuple[L4TombstoneSpec, ...] = Field(
        (), description="Places of recently removed members: in the table, owning no slot."
    )
    allowed_cidrs: tuple[str, ...] = Field(
        (),
        description="Octavia's allowed_cidrs: the only sources whose flows the node balances "
        "(IPv4 or IPv6 networks; empty: every source). Sent only when some listener has "
        "some, so agents that predate it keep working until a listener needs it, and then "
        "refuse the spec (unknown field) instead of leaving it unenforced.",
    )
    member_down: MemberDown = Field(
        "keep",
        description="What the established flows of a member that goes down or away do: keep "
        "(stay on it), cut or reroute (their conntrack entries are deleted: a TCP flow's next "
        "packet is reset, a UDP flow's next datagram balanced again). Sent only when not "
        "keep, as allowed_cidrs.",
    )

    idle_timeout: int | None = Field(
        None,
        ge=1,
        le=2_073_600,
        description="UDP only: seconds a flow may stay idle before the node forgets it "
        "(None: the kernel's own UDP timeouts). Left out when no listener has one, so "
        "agents that predate it keep serving TCP listeners; an older agent sent a UDP "
        "listener refuses the spec instead of leaving the timeout unenforced.",
    )

    @field_validator("allowed_cidrs")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in value:
            ipaddress.ip_network(cidr, strict=False)
        return value

    @model_validator(mode="after")
    def _distinct_places(self) -> L4ListenerSpec:
        if self.idle_timeout is not None and self.protocol != "udp":
            raise ValueError("an idle timeout is for UDP listeners only")
        # Weight-0 members are not in the table, so their id may be a tombstone's place.
        live = [m.place_key for m in self.members if m.weight > 0]
        places = live + [t.place for t in self.tombstones]
        if len(set(places)) != len(places):
            raise ValueError("members and tombstones of a listener must hold distinct places")
        return self


class L4ServiceSpec(_Wire):
    """The whole desired L4 service of one load balancer on one node."""

    spec_format: Literal[1] = Field(1, description="The shape of this spec; L4_SPEC_FORMAT.")
    version: int = Field(ge=0, description="Grows with every change the controller makes.")
    loadbalancer_id: str = Field(min_length=1)
    vip: str
    listeners: tuple[L4ListenerSpec, ...] = ()
    entry: bool = Field(
        False,
        description="This node is where traffic with no source node enters: it holds the VIP "
        "(answers ARP and ping) and masquerades what it forwards.",
    )
    announce: bool = Field(
        False,
        description="This node is in the L4 tier group the VIP is placed in: its BGP speaker "
        "announces the VIP to the router, and it masquerades what it forwards.",
    )
    return_mode: Literal["nat", "dsr"] = Field(
        "nat",
        description="With announce, how members answer: nat (through this node, which "
        "masquerades) or dsr (directly: this node marks the VIP's packets and routes them "
        "unchanged to the member at L2, with no conntrack entry).",
    )

    @model_validator(mode="before")
    @classmethod
    def _known_format(cls, data: Any) -> Any:
        return refuse_unreadable_format(data, "L4", L4_SPEC_FORMAT)

    @field_validator("vip")
    @classmethod
    def _vip_is_ipv4(cls, value: str) -> str:
        return _ipv4(value)


class L4PlacedMember(_Wire):
    id: str
    place: str
    weight: int
    backup: bool = False


class L4ListenerPlacement(_Wire):
    """One listener's table as applied: its size, its members' places and its tombstones."""

    table_size: int
    members: tuple[L4PlacedMember, ...] = ()
    tombstones: tuple[L4TombstoneSpec, ...] = ()


class L4ServiceStatus(_Wire):
    """What this node sees of one load balancer."""

    loadbalancer_id: str
    applied_version: int | None = None
    entry: bool = Field(False, description="Whether this node holds the VIP (entry node).")
    announce: bool = Field(False, description="Whether this node announces the VIP (tier).")
    members: dict[str, L4MemberHealth] = Field(
        default_factory=dict, description="Per member id, as this node's checker sees it."
    )
    new_flows: dict[str, int] = Field(
        default_factory=dict, description="Flows balanced on this node, per listener id."
    )
    placement: dict[str, L4ListenerPlacement] | None = Field(
        None,
        description="Per listener id, the applied Maglev places (only when asked with "
        "?placement=true): what a controller without the last placement reads back.",
    )
    local_members: tuple[str, ...] | None = Field(
        None,
        description="The ids of the members the applied spec marks local, sorted (only "
        "when asked with ?local=true): how the status poll tells that a port binding "
        "moved since the spec was sent.",
    )
    last_error: str | None = None


class L4NodeStatuses(_Wire):
    """What this node sees of every load balancer it carries (``GET /v1/l4``): the health
    manager's poll reads a node in one call per round (issue 34)."""

    services: dict[str, L4ServiceStatus] = Field(
        default_factory=dict, description="Per load balancer id, as ``GET /v1/l4/{id}``."
    )


def refuse_unreadable_format(data: Any, kind: str, readable: int) -> Any:
    """Refuse, before anything else is read, a ``kind`` spec of a format this code cannot
    read (a spec without ``spec_format`` is format 1); ``data`` otherwise, unchanged."""
    if isinstance(data, dict):
        found = data.get("spec_format", 1)
        if found != readable:
            raise ValueError(
                f"{kind} spec format {found!r} cannot be read by this agent, which reads "
                f"format {readable}: the controller and the agent run different releases"
            )
    return data
