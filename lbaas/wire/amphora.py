"""The agent's HTTPS wire format, version 1: what the controller sends and reads back.

This module is the contract between the controller (``lbaas.fleet.client``, providers) and
the agent (``lbaas.fleet.agent_app``), so it imports nothing else from the agent: the controller
imports this file alone. The API is declarative: one ``PUT /v1/amphorae/{id}`` carries the
whole desired state of an amphora (configuration text, VIP, network plumbing) and the agent
converges to it; repeating it changes nothing. Routes:

    PUT    /v1/amphorae/{amphora_id}   AmphoraSpec -> 200 AmphoraStatus
    GET    /v1/amphorae/{amphora_id}   -> 200 AmphoraStatus | 404
    GET    /v1/amphorae/{amphora_id}/diagnosis -> 200 AmphoraDiagnosis | 404
                                       (``lbaas.wire.amphora_diagnosis``; for ``lbaas diagnose``)
    DELETE /v1/amphorae/{amphora_id}   -> 204 (also when it did not exist)
    GET    /v1/info                    -> 200 AgentInfo

The configuration text is for HAProxy only: what the agent itself needs to know about it
(where the runtime socket and the server-state file are, the global ``maxconn``, every
server's weight and admin state, and a digest of everything else) travels beside it as
``HaproxyFacts``, built by the controller from the same render, so the agent never parses the
text back. ``AmphoraSpec.spec_format`` says which shape of spec a body has; an agent answers
400 to a format it does not read (``SPEC_FORMAT`` is the one this code reads and writes; a
body without the field is format 1, the text-only spec of before).

Errors are ``ErrorBody`` with status 400 (malformed request, or one this agent's mode cannot
serve), 409 (``version`` older than the applied one), 422 (HAProxy refused the
configuration; ``detail`` holds its output) and 500 (the host failed). A spec's ``version``
must never go down; an equal version is applied again (idempotently).
"""

from __future__ import annotations

import ipaddress
from pathlib import PurePosixPath
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lbaas.model.enums import AmphoraRole
from lbaas.wire.datapath import UdpListener, VipFilter, check_unique_ports
from lbaas.wire.l4 import refuse_unreadable_format

API_VERSION = 1
#: The shape of ``AmphoraSpec`` this code reads and writes (1: text only; 2: text and facts).
SPEC_FORMAT: Final = 2
API_PREFIX = "/v1"
AMPHORA_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: The characters HAProxy allows in proxy and server names.
HAPROXY_NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,200}$"
#: A digest is one word: the agent writes it into the configuration it installs.
DIGEST_PATTERN = r"^[A-Za-z0-9_.:+/=-]{1,200}$"


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
    gateway: str | None = Field(None, description="The VIP subnet's gateway (netns routing).")
    mtu: int | None = Field(None, ge=68, le=65535, description="The VIP network's MTU.")

    @model_validator(mode="after")
    def _check(self) -> VipSpec:
        _in_subnet(self.address, self.subnet_cidr, "vip")
        if self.gateway is not None:
            _in_subnet(self.gateway, self.subnet_cidr, "vip gateway")
        return self


class MemberNetwork(_Wire):
    """A network the amphora needs a leg on to reach members (netns mode)."""

    network_id: str = Field(min_length=1)
    subnet_cidr: str
    address: str = Field(description="The amphora's address on this network.")
    host_address: str | None = Field(
        None, description="An address the host puts on this network's bridge, if any."
    )
    gateway: str | None = Field(None, description="The subnet's gateway (netns routing).")
    mtu: int | None = Field(None, ge=68, le=65535, description="The network's MTU.")

    @model_validator(mode="after")
    def _check(self) -> MemberNetwork:
        _in_subnet(self.address, self.subnet_cidr, f"network {self.network_id}")
        if self.gateway is not None:
            _in_subnet(self.gateway, self.subnet_cidr, f"network {self.network_id} gateway")
        if self.host_address is not None:
            _in_subnet(self.host_address, self.subnet_cidr, f"network {self.network_id} host")
        return self


class NetworkSpec(_Wire):
    """Plumbing for netns mode; a loopback agent ignores it."""

    vip_host_address: str | None = Field(
        None, description="Address the host puts on the VIP network's bridge to reach the VIP."
    )
    member_networks: tuple[MemberNetwork, ...] = ()


class ServerSetting(_Wire):
    """One server of the configuration as the runtime API names and changes it."""

    # Proxy and server names in HAProxy's own alphabet: they go into runtime API commands.
    backend: str = Field(
        pattern=HAPROXY_NAME_PATTERN, description="The backend (proxy) name, e.g. be_<pool>."
    )
    server: str = Field(
        pattern=HAPROXY_NAME_PATTERN, description="The server name, e.g. srv_<member>."
    )
    weight: int = Field(ge=0, le=256)
    disabled: bool = Field(description="Rendered ``disabled`` (maintenance).")


class HaproxyFacts(_Wire):
    """What the agent needs to know about ``haproxy_config``, so it never reads the text.

    Two specs whose ``fixed_digest`` is equal and whose ``servers`` name the same servers in
    the same order differ at most in server weights and admin states, which the agent then
    changes through the runtime API instead of reloading.
    """

    runtime_socket: str = Field(
        min_length=1, description="Path of the admin-level unix stats socket the text opens."
    )
    server_state_file: str | None = Field(
        None, description="Where the text loads server state from at start-up, if anywhere."
    )
    maxconn: int | None = Field(None, ge=0, description="The global maxconn of the text.")
    servers: tuple[ServerSetting, ...] = Field(
        (), description="Every server line of the text, in the order of the text."
    )
    fixed_digest: str = Field(
        pattern=DIGEST_PATTERN,
        description=(
            "Digest of the configuration with every server's weight and admin state left out "
            "(and comments, which HAProxy ignores): equal digests mean the texts differ in "
            "nothing else."
        ),
    )


class VrrpSpec(_Wire):
    """ACTIVE_STANDBY: this amphora's half of the pair's VRRP (netns mode only).

    With it the VIP is not plumbed: the amphora's leg on the VIP network carries
    ``own_address`` and keepalived adds the VIP on whichever amphora is MASTER. The agent
    names the link itself and reports it (``AmphoraStatus.vrrp_interface``).
    """

    role: AmphoraRole = Field(
        description="MASTER or BACKUP, as the controller chose; MASTER has the higher priority."
    )
    priority: int = Field(ge=1, le=254)
    vrrp_id: int = Field(ge=1, le=255, description="Virtual router id, the same on both.")
    own_address: str = Field(description="This amphora's VRRP address on the VIP subnet.")
    peer_address: str = Field(description="The other amphora's VRRP address.")
    advert_interval_ms: int = Field(
        100, ge=10, le=40950, multiple_of=10, description="VRRPv3 advertisement interval."
    )
    realtime_priority: int | None = Field(
        None, ge=1, le=99, description="SCHED_RR priority of keepalived's VRRP process."
    )

    @model_validator(mode="after")
    def _paired_role(self) -> VrrpSpec:
        if self.role is AmphoraRole.STANDALONE:
            raise ValueError(f"a VRRP amphora is {AmphoraRole.MASTER} or {AmphoraRole.BACKUP}")
        return self


#: TLS file names: content-addressed (a digest), so a new certificate is a new file and
#: the running configuration's files stay as they are until the new one is applied.
TLS_FILE_PATTERN = r"^[A-Za-z0-9_-]{1,80}\.(pem|crt-list)$"
MAX_TLS_BYTES = 2 * 1024 * 1024


class TlsFile(_Wire):
    """One file of certificate material, written mode 0600 under the amphora's ``tls``
    directory before the configuration that names it is validated."""

    # A refused file must not put the start of a private key into an error or a log line.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    name: str = Field(pattern=TLS_FILE_PATTERN)
    content: str = Field(max_length=MAX_TLS_BYTES)

    def __repr__(self) -> str:  # the content is key material: never in a log line
        return f"TlsFile(name={self.name!r}, content=<{len(self.content)} characters>)"

    __str__ = __repr__


class ProbedPort(_Wire):
    """A TCP listener whose VIP:port the agent connects to every probe interval."""

    listener_id: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)


class AmphoraSpec(_Wire):
    """The whole desired state of one amphora (body of PUT /v1/amphorae/{id})."""

    # It carries private keys (``tls_files``): a validation error names fields, not values.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    spec_format: Literal[2] = Field(description="The shape of this spec; see SPEC_FORMAT.")
    version: int = Field(ge=0, description="Grows with every change the controller makes.")
    loadbalancer_id: str = Field(min_length=1)
    haproxy_config: str = Field(min_length=1, max_length=MAX_CONFIG_BYTES)
    haproxy_facts: HaproxyFacts
    vip: VipSpec
    network: NetworkSpec = NetworkSpec()
    vrrp: VrrpSpec | None = Field(None, description="ACTIVE_STANDBY only; None: SINGLE.")
    tls_files: tuple[TlsFile, ...] = Field(
        (), description="Certificate material the configuration names (under AmphoraPaths.tls_dir)."
    )
    vip_filter: VipFilter | None = Field(
        None, description="netns: what the VIP leg accepts (None: no filter, as before)."
    )
    udp_listeners: tuple[UdpListener, ...] = Field(
        (), description="netns: UDP listeners the L4 engine balances in the namespace."
    )
    vip_probes: tuple[ProbedPort, ...] = Field(
        (), description="Enabled TCP listeners whose VIP:port the agent probes (agent.vip_probe_*)."
    )

    @model_validator(mode="before")
    @classmethod
    def _readable_format(cls, data: Any) -> Any:
        return refuse_unreadable_format(data, "amphora", SPEC_FORMAT)

    @model_validator(mode="after")
    def _check(self) -> AmphoraSpec:
        host = self.network.vip_host_address
        if host is not None:
            _in_subnet(host, self.vip.subnet_cidr, "vip_host_address")
            if ipaddress.ip_address(host) == ipaddress.ip_address(self.vip.address):
                raise ValueError("vip_host_address must differ from the VIP")
        if self.vrrp is not None:
            vrrp = self.vrrp
            _in_subnet(vrrp.own_address, self.vip.subnet_cidr, "vrrp own_address")
            _in_subnet(vrrp.peer_address, self.vip.subnet_cidr, "vrrp peer_address")
            addresses = [vrrp.own_address, vrrp.peer_address, self.vip.address]
            addresses += [] if host is None else [host]
            if len({ipaddress.ip_address(a) for a in addresses}) != len(addresses):
                raise ValueError("the VIP, the host's and both VRRP addresses must differ")
        check_unique_ports(self.udp_listeners)
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
    vrrp_interface: str | None = Field(
        None, description="ACTIVE_STANDBY: the link keepalived runs VRRP on (in the namespace)."
    )
    keepalived_pid: int | None = None
    vrrp_state: str | None = Field(
        None,
        description="ACTIVE_STANDBY: the state keepalived last entered (MASTER, BACKUP, "
        "FAULT); None while it has not said or is not running.",
    )


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
    access_log_dir: str | None = Field(
        None,
        description=(
            "Directory of the UNIX stream sockets this agent reads access logs from, one "
            "<amphora id>.sock each; None: <amphora_root>-logs (see amphora_paths)."
        ),
    )
    wire_version: int | None = Field(
        None,
        ge=1,
        description="The agent's wire version (``lbaas.wire.versions``); sent only to a "
        "controller that stated 2 or more. None: an agent of version 1.",
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
    tls_dir: str
    access_log_socket: str


def amphora_paths(
    amphora_root: str, amphora_id: str, access_log_dir: str | None = None
) -> AmphoraPaths:
    """The paths to render into an amphora's HAProxy configuration (``HaproxyContext``)."""
    directory = PurePosixPath(amphora_root) / amphora_id
    return AmphoraPaths(
        directory=str(directory),
        runtime_socket=str(directory / "stats.sock"),
        state_dir=str(directory),
        tls_dir=str(directory / "tls"),
        access_log_socket=access_log_socket(amphora_root, amphora_id, access_log_dir),
    )


def access_log_socket(amphora_root: str, amphora_id: str, directory: str | None = None) -> str:
    """The agent's UNIX stream socket an amphora's HAProxy forwards its access-log ring to.

    Not in the amphora's own directory: that one is 0700 root, and HAProxy's workers send
    their lines after dropping to an unprivileged user, who must reach the socket through
    every directory above it. A root agent therefore names a directory outside its private
    state (``access_log.socket_directory``, 0710 for the workers' group); an agent that is
    not root runs HAProxy as itself and keeps them in ``<amphora_root>-logs``.
    """
    if directory is None:
        root = PurePosixPath(amphora_root)
        directory = str(root.with_name(root.name + "-logs"))
    return str(PurePosixPath(directory) / f"{amphora_id}.sock")
