"""The agent's HTTPS wire format, version 1: what the controller sends and reads back.

This module is the contract between the controller (``lbaas.agent.client``, providers) and
the agent (``lbaas.agent.api``), so it imports nothing else from the agent: the controller
imports this file alone. The API is declarative: one ``PUT /v1/amphorae/{id}`` carries the
whole desired state of an amphora (configuration text, VIP, network plumbing) and the agent
converges to it; repeating it changes nothing. Routes:

    PUT    /v1/amphorae/{amphora_id}   AmphoraSpec -> 200 AmphoraStatus
    GET    /v1/amphorae/{amphora_id}   -> 200 AmphoraStatus | 404
    DELETE /v1/amphorae/{amphora_id}   -> 204 (also when it did not exist)
    GET    /v1/info                    -> 200 AgentInfo

Errors are ``ErrorBody`` with status 400 (malformed request, or one this agent's mode cannot
serve), 409 (``version`` older than the applied one), 422 (HAProxy refused the
configuration; ``detail`` holds its output) and 500 (the host failed). A spec's ``version``
must never go down; an equal version is applied again (idempotently).
"""

from __future__ import annotations

import ipaddress
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

API_VERSION = 1
API_PREFIX = "/v1"
AMPHORA_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MAX_CONFIG_BYTES = 4 * 1024 * 1024


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _in_subnet(address: str, cidr: str, what: str) -> None:
    try:
        network = ipaddress.ip_network(cidr, strict=False)
        ip = ipaddress.ip_address(address)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from exc
    if ip not in network:
        raise ValueError(f"{what}: {address} is not in {cidr}")


class VipSpec(_Wire):
    """The address clients connect to and the network it lives on."""

    address: str = Field(description="The VIP address HAProxy binds, e.g. 127.0.10.5.")
    subnet_cidr: str = Field(description="The VIP's subnet; gives the prefix length.")
    network_id: str = Field(min_length=1, description="The VIP network (netns: its bridge).")

    @model_validator(mode="after")
    def _check(self) -> VipSpec:
        _in_subnet(self.address, self.subnet_cidr, "vip")
        return self


class MemberNetwork(_Wire):
    """A network the amphora needs a leg on to reach members (netns mode)."""

    network_id: str = Field(min_length=1)
    subnet_cidr: str
    address: str = Field(description="The amphora's address on this network.")
    host_address: str | None = Field(
        None, description="An address the host puts on this network's bridge, if any."
    )

    @model_validator(mode="after")
    def _check(self) -> MemberNetwork:
        _in_subnet(self.address, self.subnet_cidr, f"network {self.network_id}")
        if self.host_address is not None:
            _in_subnet(self.host_address, self.subnet_cidr, f"network {self.network_id} host")
        return self


class NetworkSpec(_Wire):
    """Plumbing for netns mode; a loopback agent ignores it."""

    vip_host_address: str | None = Field(
        None, description="Address the host puts on the VIP network's bridge to reach the VIP."
    )
    member_networks: tuple[MemberNetwork, ...] = ()


class AmphoraSpec(_Wire):
    """The whole desired state of one amphora (body of PUT /v1/amphorae/{id})."""

    version: int = Field(ge=0, description="Grows with every change the controller makes.")
    loadbalancer_id: str = Field(min_length=1)
    haproxy_config: str = Field(min_length=1, max_length=MAX_CONFIG_BYTES)
    vip: VipSpec
    network: NetworkSpec = NetworkSpec()

    @model_validator(mode="after")
    def _check(self) -> AmphoraSpec:
        host = self.network.vip_host_address
        if host is not None:
            _in_subnet(host, self.vip.subnet_cidr, "vip_host_address")
            if ipaddress.ip_address(host) == ipaddress.ip_address(self.vip.address):
                raise ValueError("vip_host_address must differ from the VIP")
        return self


ApplyOutcomeName = Literal["UNCHANGED", "STARTED", "RUNTIME_API", "RELOADED"]


class AmphoraStatus(_Wire):
    """What the agent knows about one amphora (answer to PUT and GET)."""

    amphora_id: str
    loadbalancer_id: str | None = None
    applied_version: int | None = Field(None, description="Version of the last applied spec.")
    running: bool = False
    master_pid: int | None = None
    namespace: str | None = None
    reloads: int = Field(0, description="Reloads done by this agent process.")
    restarts: int = Field(0, description="Times a dead HAProxy was started again.")
    runtime_changes: int = Field(0, description="Changes applied through the runtime API.")
    last_outcome: ApplyOutcomeName | None = None
    last_error: str | None = None


class AgentInfo(_Wire):
    """Answer to GET /v1/info."""

    api_version: int = API_VERSION
    mode: Literal["loopback", "netns"]
    haproxy_version: str
    amphora_root: str = Field(
        description="Directory holding one sub-directory per amphora (see amphora_paths)."
    )
    amphorae: tuple[str, ...] = ()
    max_connections: int | None = Field(
        None,
        description=(
            "Largest global maxconn HAProxy can start with on this host (file descriptor "
            "limit); render HaproxyContext.maxconn_default at most this. None: no limit known."
        ),
    )


class ErrorBody(_Wire):
    """Every non-2xx answer."""

    error: str = Field(
        description="Kind: bad_request, not_found, stale_version, invalid_config, host, internal."
    )
    message: str
    detail: str | None = None


class AmphoraPaths(_Wire):
    """Where an amphora's files live on its agent's host, for rendering its configuration."""

    directory: str
    runtime_socket: str
    state_dir: str


def amphora_paths(amphora_root: str, amphora_id: str) -> AmphoraPaths:
    """The paths to render into an amphora's HAProxy configuration (``HaproxyContext``)."""
    directory = PurePosixPath(amphora_root) / amphora_id
    return AmphoraPaths(
        directory=str(directory),
        runtime_socket=str(directory / "stats.sock"),
        state_dir=str(directory),
    )
