# size: one schema whose every field carries its own description (docs/configuration.md is
# generated from it); the sections are small classes, and splitting them over modules
# would only scatter the one place an operator reads to learn a setting's rules.
"""One typed settings object, made of small documented sections.

Settings are read once by ``lbaas.cli`` — from an optional TOML file, then from the
environment as ``LBAAS_<SECTION>__<FIELD>`` (``LBAAS_API__PORT=9999``) — validated with
errors that name the field, and passed down into constructors. Nothing imports a global
configuration. Every default works for the embedded mode (``lbaas serve``: SQLite under
the state directory, VIPs on 127.0.0.0/8, no root). ``docs/configuration.md`` is generated
from these classes (``lbaas config-reference``), so docs and code cannot drift.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from lbaas.errors import ConfigError
from lbaas.state_directory import DEFAULT_TEXT as DEFAULT_STATE_DIR_TEXT
from lbaas.state_directory import default_state_dir


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


TlsVersion = Literal["SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"]
AlpnProtocol = Literal["h2", "http/1.1", "http/1.0"]
# An OpenSSL cipher string, in the characters the API accepts from tenants.
CipherString = Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9+!:@=_.-]+$")]
# The built-in cipher defaults: TLS 1.3 and DHE suites first, then ECDHE (listener and pool
# order the ECDHE suites differently, as the reference does).
_TLS13_AND_DHE = (
    "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"
    ":DHE-RSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256"
)
LISTENER_TLS_CIPHERS = (
    _TLS13_AND_DHE + ":ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
    ":ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
    ":ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
)
POOL_TLS_CIPHERS = (
    _TLS13_AND_DHE + ":ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256"
    ":ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"
    ":ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-CHACHA20-POLY1305"
)
_DEFAULT_TLS_VERSIONS: tuple[TlsVersion, ...] = ("TLSv1.2", "TLSv1.3")
_DEFAULT_ALPN: tuple[AlpnProtocol, ...] = ("h2", "http/1.1", "http/1.0")
_L, _P = "TERMINATED_HTTPS listener", "tls_enabled pool"


def _filled_in(default: object, field: str, owner: str) -> Any:
    """A default the operator sets for what a request leaves out (never an empty one)."""
    return Field(
        default,
        min_length=1,
        description=f"The {field} a {owner} gets when its request leaves them out.",
    )


class ApiSettings(_Section):
    """The Octavia-compatible REST API."""

    host: str = Field("127.0.0.1", description="Address the API listens on.")
    port: int = Field(9876, description="Port the API listens on (Octavia's default).")
    auth_strategy: Literal["noauth", "keystone_headers", "keystone"] = Field(
        "noauth",
        description=(
            "noauth: identity from X-Project-Id / X-Roles when sent, else default_project_id "
            "and default_roles; served on loopback addresses only (allow_insecure_noauth). "
            "keystone_headers: a Keystone auth_token middleware in front sets those "
            "headers; a request without roles may do nothing. keystone: every request "
            "carries a token lbaas validates against Keystone ([keystone_authtoken])."
        ),
    )
    allow_insecure_noauth: bool = Field(
        False,
        description=(
            "Let auth_strategy = noauth listen on an address beyond loopback, where anyone "
            "who reaches it is whoever their headers say (an administrator when they say "
            "nothing). Without it such a start is refused; with it, it warns at every start."
        ),
    )
    policy_file: Path | None = Field(
        None,
        description=(
            "An oslo.policy file (YAML) overriding Octavia's rules by name "
            "(os_load-balancer_api:loadbalancer:get_one, load-balancer:read, ...); "
            "`oslopolicy-sample-generator --namespace lbaas` prints them all. Re-read when "
            "it changes. Unset: the defaults only, no file is searched for."
        ),
    )
    default_project_id: str = Field(
        "default",
        description="Project used when a request carries no X-Project-Id header.",
    )
    default_roles: tuple[str, ...] = Field(
        ("admin",),
        description=(
            "Roles of a caller that sends no X-Roles header (noauth only). The default makes "
            "the single-user embedded mode an administrator, like Octavia's noauth."
        ),
    )
    enforce_new_defaults: bool = Field(
        True,
        description=(
            "Honour only keystone roles (admin/member/reader). False also honours the "
            "deprecated load-balancer_* roles, as oslo.policy does with the same switch."
        ),
    )
    pagination_max_limit: int = Field(1000, description="Largest page a list returns.")
    api_base_uri: str | None = Field(
        None, description="Base URL used in pagination links instead of the request URL."
    )
    max_body_bytes: int = Field(114688, description="Larger request bodies get 413.")
    metrics_enabled: bool | None = Field(
        None,
        description=(
            "Serve /metrics in Prometheus' text format, without authentication: load "
            "balancers and amphorae by status, the converge queue, responses per status. "
            "Unset: on under `lbaas serve` while the API listens on a loopback address "
            "(the default 127.0.0.1), off otherwise (`lbaas api`, or a serve reachable "
            "from other hosts); true serves it wherever the API listens; false never."
        ),
    )
    healthcheck_enabled: bool = Field(
        False,
        description=(
            "Serve /healthcheck (GET or HEAD, no authentication): 200 'OK' while the "
            "database answers, 503 otherwise, for a load balancer in front of API "
            "processes. Off by default, as in Octavia (404)."
        ),
    )
    dashboard_enabled: bool = Field(
        True,
        description=(
            "Serve the web dashboard at /dashboard: the load balancers the caller may list, "
            "live, with member drain and failover through the API's own routes and RBAC."
        ),
    )
    dashboard_update_interval: float = Field(
        0.5,
        gt=0,
        description=(
            "Seconds between two database reads of one open dashboard page (its live "
            "updates); each open page reads its own scope."
        ),
    )
    dashboard_stream_seconds: float = Field(
        60.0,
        gt=0,
        description=(
            "A dashboard's event stream ends after this long and the browser reconnects, "
            "which re-checks the caller's identity and roles."
        ),
    )
    telemetry: bool = Field(
        False,
        description=(
            "FastAPI's native OpenTelemetry spans, metrics and logs, to the global providers. "
            "Off by default: with no exporter configured it is pure per-request overhead."
        ),
    )
    # The operator's switches of Octavia's [api_settings], under the same names.
    allow_tls_terminated_listeners: bool = Field(
        True,
        description="false: TERMINATED_HTTPS listeners and PROMETHEUS listeners with a "
        "certificate are refused (400), as Octavia's switch of the same name.",
    )
    allow_prometheus_listeners: bool = Field(
        True, description="false: PROMETHEUS listeners are refused (400)."
    )
    allow_ping_health_monitors: bool = Field(
        True, description="false: PING health monitors are refused (400)."
    )
    udp_connect_min_interval_health_monitor: int = Field(
        3,
        ge=0,
        description="The smallest delay (seconds) a UDP-CONNECT health monitor may have (0: any).",
    )
    minimum_tls_version: TlsVersion | None = Field(
        None,
        description="A listener's or pool's tls_versions may name no older version (400). "
        "default_listener_tls_versions and default_pool_tls_versions must satisfy it, else "
        'the API does not start (TLSv1.3 alone: set both to ["TLSv1.3"]).',
    )
    tls_cipher_prohibit_list: str = Field(
        "",
        description="OpenSSL cipher names, colon-separated, that a listener's or pool's "
        "tls_ciphers may not name (400). default_listener_ciphers and default_pool_ciphers "
        "must name none of them, else the API does not start.",
    )
    # What a TERMINATED_HTTPS listener or a tls_enabled pool gets for what it leaves out
    # (stored with it, as the reference does; checked against the two policies above).
    default_listener_ciphers: CipherString = _filled_in(LISTENER_TLS_CIPHERS, "tls_ciphers", _L)
    default_pool_ciphers: CipherString = _filled_in(POOL_TLS_CIPHERS, "tls_ciphers", _P)
    default_listener_tls_versions: tuple[TlsVersion, ...] = _filled_in(
        _DEFAULT_TLS_VERSIONS, "tls_versions", _L
    )
    default_pool_tls_versions: tuple[TlsVersion, ...] = _filled_in(
        _DEFAULT_TLS_VERSIONS, "tls_versions", _P
    )
    default_listener_alpn_protocols: tuple[AlpnProtocol, ...] = _filled_in(
        _DEFAULT_ALPN, "alpn_protocols", _L
    )
    default_pool_alpn_protocols: tuple[AlpnProtocol, ...] = _filled_in(
        _DEFAULT_ALPN, "alpn_protocols", _P
    )


class DatabaseSettings(_Section):
    """Where desired state and jobs are kept."""

    url: str = Field(
        "",
        description=(
            "SQLAlchemy URL. Empty means SQLite at <state_dir>/lbaas.sqlite (WAL mode). "
            "PostgreSQL: postgresql+psycopg://user@host/db."
        ),
    )
    pool_size: int = Field(10, description="Connections kept per process (PostgreSQL).")


class WorkerSettings(_Section):
    """The converge worker and its durable job queue."""

    threads: int = Field(4, description="Load balancers converged in parallel per process.")
    lease_seconds: float = Field(
        6.0,
        gt=0,
        description=(
            "A claimed job is claimed again if its worker is silent this long. The worker "
            "renews its leases every third of it, so a healthy worker can miss two renewals."
        ),
    )
    stop_timeout: float = Field(
        10.0,
        ge=0,
        description=(
            "On SIGTERM, how long a worker lets its running converges finish before it "
            "frees their leases and exits; lbaas serve SIGKILLs a worker child that has "
            "not exited 5 s after this."
        ),
    )
    poll_interval: float = Field(
        0.5, description="How often an idle worker looks for jobs it was not told about."
    )
    max_attempts: int = Field(
        20,
        description=(
            "Failed attempts (temporary errors) before a load balancer goes to ERROR. With "
            "the default backoff that is about 80 s: an agent that restarts, or is down "
            "that long, leaves its load balancers PENDING, not ERROR (a delete stays "
            "a delete)."
        ),
    )
    backoff_base: float = Field(0.5, description="First retry delay in seconds; doubles.")
    backoff_max: float = Field(
        5.0,
        description=(
            "Longest retry delay in seconds: a load balancer converges at most this long "
            "after its provider (an agent) is back."
        ),
    )
    resync_interval: float = Field(
        60.0,
        description=(
            "Each load balancer is compared with its data plane about this often (spread "
            "out, not at once): re-converged, or, where its provider reports the version "
            "its data plane holds (distributed), only checked against the version last sent."
        ),
    )
    deleted_retention: float = Field(
        604800.0,
        ge=0,
        description=(
            "Seconds DELETED load balancer and amphora records are kept before they are "
            "purged (Octavia's default is a week). 0 keeps them forever."
        ),
    )
    housekeeping_interval: float = Field(
        3600.0, gt=0, description="How often each worker purges expired DELETED records."
    )
    metrics_host: str = Field(
        "127.0.0.1", description="Address a worker's own /metrics listens on (see metrics_port)."
    )
    metrics_port: int = Field(
        0,
        ge=0,
        le=65535,
        description=(
            "Serve this worker process's own Prometheus metrics (converge durations and "
            "outcomes) over HTTP on this port plus the worker's slot number (0, 1, ...), "
            "without authentication. 0: not served."
        ),
    )


class QuotaSettings(_Section):
    """Default per-project quotas; -1 is unlimited."""

    loadbalancer: int = -1
    listener: int = -1
    pool: int = -1
    member: int = -1
    healthmonitor: int = -1
    l7policy: int = -1
    l7rule: int = -1


class SubnetDeclaration(_Section):
    """A subnet the service knows about, declared in the configuration file."""

    id: str
    network_id: str
    cidr: str
    name: str = ""
    gateway_ip: str | None = None
    mtu: int | None = Field(
        None, ge=68, le=65535, description="The network's MTU (amphora legs take it)."
    )
    # Addresses others on the network hold (hosts, routers): never given to a VIP or amphora.
    reserved_addresses: tuple[str, ...] = ()


class NetworkSettings(_Section):
    """The registry of subnets VIPs and members are allocated from."""

    loopback_subnet_cidr: str = Field(
        "127.0.10.0/24",
        description="The default subnet VIPs come from in loopback mode (inside 127.0.0.0/8).",
    )
    loopback_subnet_id: str = Field(
        "7f000a00-0000-4000-8000-000000000001", description="Id of the loopback subnet."
    )
    loopback_network_id: str = Field(
        "7f000a00-0000-4000-8000-000000000000", description="Id of the loopback network."
    )
    subnets: tuple[SubnetDeclaration, ...] = Field(
        (), description="Further subnets to register at start-up."
    )
    reserved_member_addresses: tuple[str, ...] = Field(
        ("169.254.169.254",), description="Addresses members may not use."
    )


class ProviderSettings(_Section):
    """Which providers are enabled."""

    enabled: tuple[str, ...] = Field(
        ("amphora", "noop"),
        description="Provider names loaded at start-up (entry points lbaas.providers).",
    )
    default: str = Field("amphora", description="Provider of load balancers that name none.")
    noop_delay: float = Field(0.0, description="Seconds the noop provider sleeps per apply.")
    noop_fail: Literal["none", "temporary", "permanent", "unexpected"] = Field(
        "none", description="Make the noop provider fail (for tests)."
    )
    amphora_maxconn: int = Field(
        8000,
        description=(
            "HAProxy's global maxconn, and a listener's when its connection_limit is -1 "
            "(Octavia uses 50000; HAProxy needs about two file descriptors per connection, "
            "so keep it under half of the agent host's open-files limit)."
        ),
    )
    amphora_hard_stop_after: int = Field(
        900,
        ge=0,
        description=(
            "Seconds a HAProxy worker replaced by a reload may keep serving the connections "
            "it still holds before it is stopped (HAProxy's hard-stop-after); without a "
            "limit, long-lived connections keep old workers, their memory and descriptors, "
            "forever. 0: no limit."
        ),
    )
    noop_record_path: str = Field(
        "", description="If set, the noop provider appends one JSON line per call here."
    )
    loadbalancer_topology: Literal["SINGLE", "ACTIVE_STANDBY"] = Field(
        "SINGLE",
        description=(
            "Topology of load balancers whose flavor does not set loadbalancer_topology "
            "(Octavia's [controller_worker] loadbalancer_topology). ACTIVE_STANDBY needs "
            "agents in netns mode."
        ),
    )
    amphora_vrrp_advert_interval_ms: int = Field(
        100,
        ge=10,
        le=40950,
        multiple_of=10,
        description=(
            "ACTIVE_STANDBY: VRRPv3 advertisement interval in milliseconds. The BACKUP takes "
            "over about 3.5 intervals after the MASTER falls silent (see docs/architecture.md "
            "for the measurements behind the default)."
        ),
    )
    amphora_vrrp_realtime_priority: int = Field(
        0,
        ge=0,
        le=99,
        description=(
            "ACTIVE_STANDBY: real-time (SCHED_RR) priority of keepalived's VRRP process; "
            "0: normal scheduling. Off by default: keepalived 2.2.7 restarts its VRRP "
            "process on a reload when it runs real-time, dropping the VIP for a moment, and "
            "normal scheduling measured as fast with no spurious takeover under full load."
        ),
    )
    distributed_nodes: tuple[str, ...] = Field(
        (),
        description=(
            "Agent URLs (https://host:port) of the nodes the distributed provider programs, "
            "every one of them for every distributed load balancer. Empty: the one agent of "
            "agent.host:agent.port."
        ),
    )
    distributed_use_hosts: bool = Field(
        True,
        description=(
            "The distributed provider also programs every UP host of the fleet's hosts "
            "registry (enrolled agents), beside distributed_nodes."
        ),
    )
    distributed_status_interval: float = Field(
        2.0,
        gt=0,
        description=(
            "Seconds between two polls of every node for the member health of distributed "
            "load balancers (by the health manager)."
        ),
    )


class HealthSettings(_Section):
    """Heartbeat receiver and stale-amphora failover."""

    bind_host: str = Field("127.0.0.1", description="Address heartbeats are received on.")
    bind_port: int = Field(5555, description="UDP port heartbeats are received on.")
    heartbeat_key: str = Field(
        "",
        description=(
            "HMAC key shared by agents and the health manager. Empty: a random key is "
            "generated at first start as <state_dir>/heartbeat.key (mode 0600) and shared "
            "with the agent on the same state directory; set it for agents on other hosts."
        ),
    )
    heartbeat_interval: float = Field(1.0, description="Seconds between agent heartbeats.")
    stale_after: float = Field(3.0, description="An amphora silent this long is considered failed.")
    probe_timeout: float = Field(
        1.0,
        description=(
            "Before failing over a silent amphora, its listeners are probed on the VIP for "
            "up to this many seconds each (an ACTIVE_STANDBY amphora: HAProxy's peers port "
            "on its own VRRP address, since either amphora answers the VIP); if it answers, "
            "only the agent is degraded and nothing is rebuilt. 0: no probe, silence alone "
            "fails over."
        ),
    )
    host_stale_after: float = Field(
        2.5,
        gt=0,
        description=(
            "An agent host whose host heartbeats stop for this long is marked DOWN, takes "
            "no new amphorae and no calls, and its amphorae are failed over at once (each "
            "after a data-plane probe, started probe_timeout ahead). 2.5 s of 1 s "
            "heartbeats: one lost datagram and half a second of delay are not a loss."
        ),
    )
    agent_restart_grace: float = Field(
        60.0,
        ge=0,
        description=(
            "A host silent for host_stale_after whose kernel still answers on its agent's "
            "port (a TCP connect accepted or refused, not timed out) is an agent restarting "
            "or wedged, not a lost host: it stays UP for up to this many seconds more and "
            "its ACTIVE_STANDBY amphorae are not rebuilt meanwhile (its SINGLE ones are "
            "still judged by their VIPs). An upgrade's agent restart took 2-22 s. 0: a "
            "silent host is lost whatever it answers."
        ),
    )
    lb_failover_limit: int = Field(
        3,
        ge=0,
        description=(
            "Automatic failovers of one load balancer within lb_failover_window seconds "
            "before its circuit breaker opens: more silent amphorae of it are logged and "
            "left alone until the window has passed. 0: no per-load-balancer limit."
        ),
    )
    lb_failover_window: float = Field(
        300.0, gt=0, description="The window of lb_failover_limit, in seconds."
    )
    failover_threshold: float = Field(
        0.5,
        description=(
            "If more than this share of all amphorae is stale at once, automatic failover "
            "stops and an alarm is raised (a failover storm is more likely our fault)."
        ),
    )
    certificate_renewal_interval: float = Field(
        3600.0,
        ge=0,
        description=(
            "Seconds between certificate renewal rounds while running: the health manager "
            "renews the controller's certificate and every agent's past two thirds of its "
            "lifetime (over the agent's API), lbaas serve's agent its own. 0: only at start."
        ),
    )
    metrics_port: int = Field(
        0,
        ge=0,
        le=65535,
        description=(
            "Serve a separate lbaas health process's own Prometheus metrics (heartbeats by "
            "outcome, failovers started, the storm guard) over HTTP on bind_host at this "
            "port, without authentication. 0: not served. Under lbaas serve they are in "
            "the API's /metrics instead."
        ),
    )


class AgentSettings(_Section):
    """The per-host agent that runs HAProxy for amphorae."""

    host: str = Field("127.0.0.1", description="Address the agent's HTTPS API listens on.")
    port: int = Field(9443, description="Port of the agent's HTTPS API.")
    mode: Literal["loopback", "netns"] = Field(
        "loopback",
        description="loopback: VIPs on 127.0.0.0/8, no root. netns: one namespace per amphora.",
    )
    haproxy_binary: str = Field("haproxy", description="HAProxy executable.")
    l4_health_batch_size: int = Field(
        64,
        ge=1,
        description=(
            "Member health changes that make the node's L4 health checker (and each amphora's "
            "UDP member checker) update the kernel tables at once (else after "
            "l4_health_batch_delay)."
        ),
    )
    l4_health_batch_delay: float = Field(
        0.2,
        ge=0,
        description="Seconds a member health change may wait to be applied with others.",
    )
    heartbeat_member_counters: bool = Field(
        True,
        description=(
            "Whether heartbeats carry each member's traffic counters (the /metrics "
            "lbaas_member_* traffic series). Off, members' statuses and pools' counters still "
            "travel, and the health manager folds one counter record per listener and pool "
            "instead of one per member too."
        ),
    )
    vip_probe_interval: float = Field(
        5.0,
        ge=0,
        description=(
            "Seconds between the agent's TCP connects to every VIP:port it serves (from inside "
            "the amphora namespace in netns mode); the result goes into the heartbeat and "
            "/metrics' lbaas_listener_vip_probe_up. 0 turns probing off."
        ),
    )
    vip_probe_timeout: float = Field(
        1.0, gt=0, description="Seconds one VIP probe's TCP connect may take before it fails."
    )
    host_id: str = Field(
        "local",
        description=(
            "This agent's host id in the fleet (one DNS label); its certificate names "
            "<host_id>.agents.lbaas and the controller checks it. lbaas serve enrols its "
            "own agent under this id; other hosts get theirs from lbaas agent enrol."
        ),
    )
    zone: str = Field(
        "nova",
        description=(
            "The availability zone this host declares: load balancers whose availability "
            "zone profile has this compute_zone are placed on hosts declaring it."
        ),
    )
    capacity: int = Field(100, gt=0, description="Most amphorae placement puts on this host.")
    log_socket_keeper: bool = Field(
        True,
        description=(
            "Whether the agent hands its amphorae's access-log listeners to a small process "
            "of their own (python -m lbaas.amphora.socket_keeper), so they keep listening "
            "while the agent restarts: HAProxy's log forwarders then wait instead of "
            "reconnecting without pause, and the next agent reads the lines queued meanwhile."
        ),
    )
    tier_bird_socket: str = Field(
        "",
        description=(
            "L4 tier node: the control socket of this node's BIRD. With tier_vips_file set, "
            "the agent announces the VIPs of the distributed load balancers placed in this "
            "node's group (specs with announce) by rewriting that file and reconfiguring BIRD."
        ),
    )
    tier_vips_file: str = Field(
        "",
        description=(
            "L4 tier node: the file of static VIP routes the agent writes, included by the "
            "node's BIRD configuration (its `protocol static`). Empty: not a tier node."
        ),
    )
    bundle: str = Field(
        "",
        description=(
            "Directory written by lbaas agent enrol (CA, this host's certificate and key, "
            "heartbeat key). Empty: the identity is issued from <state_dir>/pki (the "
            "embedded mode, where controller and agent share the state directory)."
        ),
    )
    health_managers: tuple[str, ...] = Field(
        (),
        description=(
            "host:port of every health manager heartbeats go to (Octavia's "
            "controller_ip_port_list); each heartbeat is sent to all. Empty: "
            "health.bind_host:bind_port."
        ),
    )
    namespace_prefix: str = Field(
        "lbaas-",
        pattern=r"^[a-z0-9][a-z0-9-]{0,39}$",
        description=(
            "netns mode: amphora namespaces are named <prefix>amp-<hash>. A host owner that "
            "must find them sets it (the lab uses <lab>-h<N>-, so removing a lab host removes "
            "its amphorae)."
        ),
    )
    spare_amphorae: int = Field(
        0,
        ge=0,
        le=64,
        description=(
            "netns mode: amphora slots kept prepared on this host (a namespace and a HAProxy "
            "master running a placeholder), so that a create or a failover placed here only "
            "loads its configuration; refilled in the background after one is taken. Each "
            "costs a HAProxy master and worker (see docs/operations.md). 0: none. Refused "
            "in loopback mode."
        ),
    )
    bridge_mappings: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "netns mode: network id -> name of an existing Linux bridge in the agent's network "
            "namespace, joined to the host's uplink for that network (as Neutron's "
            "bridge_mappings). Amphora legs on a mapped network go on that bridge; the agent "
            "neither creates, addresses nor deletes it, since the network's gateway is a router "
            "elsewhere, and amphorae get a default route via the VIP subnet's gateway. "
            "Unmapped networks get an agent-made bridge holding the gateway address."
        ),
    )


class MetadataSettings(_Section):
    """The instance metadata service and the agents' metadata proxies (issue 16)."""

    enabled: bool = Field(
        True,
        description=(
            "Serve the OpenStack metadata layout (/openstack/latest/meta_data.json, "
            "/latest/meta-data/...) on the API listener, to signed requests only."
        ),
    )
    shared_secret: str = Field(
        "",
        description=(
            "HMAC-SHA256 key the metadata proxies sign instance ids with (Nova's "
            "metadata_proxy_shared_secret). Empty: a random one is generated at first start "
            "as <state_dir>/metadata_proxy.key (mode 0600); set it for agents on other hosts."
        ),
    )
    proxies: bool = Field(
        True,
        description=(
            "netns-mode agents keep one metadata proxy (a namespace and an HAProxy on "
            "169.254.169.254) per network with an instance port bound to their host "
            "(agent.host_id), synced from the port registry. false: none is run."
        ),
    )
    registry_url: str = Field(
        "",
        description=(
            "The control plane's API the agents read their host's ports from "
            "(GET /v2.0/ports?binding:host_id=...). Empty: http://<api.host>:<api.port>."
        ),
    )
    upstream_url: str = Field(
        "",
        description=(
            "Where the agents forward signed metadata requests: lbaas's metadata service or "
            "a Nova metadata API (http://nova-api:8775, with its "
            "metadata_proxy_shared_secret as shared_secret). Empty: registry_url."
        ),
    )
    sync_interval: float = Field(
        1.0,
        gt=0,
        description=(
            "Seconds between two reads of the host's ports by the agent (a port bound, "
            "moved or removed is acted on within about this long)."
        ),
    )


class KubernetesSettings(_Section):
    """``lbaas kubernetes``: the controller that turns Services into load balancers."""

    kubeconfig: Path | None = Field(
        None,
        description=(
            "A kubeconfig file (its current context, or `context`). When neither this nor "
            "`api_url` is set, the in-cluster service account is used."
        ),
    )
    context: str | None = Field(None, description="The kubeconfig context to use.")
    api_url: str | None = Field(
        None, description="The Kubernetes API's URL, instead of a kubeconfig."
    )
    token_file: Path | None = Field(
        None, description="A file holding the bearer token sent with `api_url`."
    )
    ca_file: Path | None = Field(None, description="CA bundle for `api_url` (HTTPS).")
    cluster_name: str = Field(
        "kubernetes",
        description=(
            "Tagged on every Octavia object (kube-cluster=NAME); orphans are looked for "
            "among this cluster's load balancers only."
        ),
    )
    namespaces: tuple[str, ...] = Field(
        (), description="Watch only these namespaces (empty: the whole cluster)."
    )
    exclude_namespaces: tuple[str, ...] = Field(
        (), description="Services in these namespaces are left alone."
    )
    mode: Literal["loadbalancer", "clusterip"] = Field(
        "loadbalancer",
        description=(
            "loadbalancer: Services of type LoadBalancer, VIP allocated (or "
            "spec.loadBalancerIP) and written to status.loadBalancer.ingress. clusterip: as "
            "Kuryr did, also Services of type ClusterIP, their VIP being the cluster IP."
        ),
    )
    require_annotation: bool = Field(
        False,
        description='Select only Services annotated lbaas.openstack.org/enabled: "true".',
    )
    class_prefix: str = Field(
        "lbaas.openstack.org",
        description=(
            "spec.loadBalancerClass values PREFIX/PROVIDER are ours (PROVIDER `default`: the "
            "cloud's default provider); other classes are left alone."
        ),
    )
    claim_unclassed: bool = Field(
        True, description="Also handle Services with no spec.loadBalancerClass."
    )
    endpoints_source: Literal["auto", "slices", "endpoints"] = Field(
        "auto",
        description=(
            "Where members come from: EndpointSlices, legacy Endpoints, or auto (slices, "
            "and Endpoints for a Service that has no slice)."
        ),
    )
    octavia_cloud: str | None = Field(
        None, description="The clouds.yaml entry to reach Octavia (Keystone auth)."
    )
    octavia_endpoint: str | None = Field(
        None,
        description="An Octavia-compatible endpoint used without Keystone (auth_type none).",
    )
    vip_subnet_id: str | None = Field(
        None, description="Subnet VIPs are allocated on (an annotation may override it)."
    )
    member_subnet_id: str | None = Field(None, description="Subnet of members, if needed.")
    workers: int = Field(8, ge=1, description="Services converged at the same time.")
    endpoint_batch_delay: float = Field(
        0.05,
        ge=0,
        description=(
            "Seconds an endpoint change waits before its Service is converged, so that a "
            "burst of endpoint updates becomes one member write (0: at once)."
        ),
    )
    backoff_base: float = Field(0.5, gt=0, description="First retry delay (seconds).")
    backoff_cap: float = Field(60.0, gt=0, description="Longest retry delay (seconds).")
    wait_active_timeout: float = Field(
        60.0, gt=0, description="How long one write waits for its load balancer's ACTIVE."
    )
    resync_interval: float = Field(
        600.0,
        ge=0,
        description="Seconds between full resyncs against Octavia (0: only at start and 410).",
    )
    leader_election: bool = Field(
        True,
        description=(
            "Act only while holding a coordination.k8s.io/v1 Lease, so that replicas of the "
            "controller take turns (the others wait, ready to take over)."
        ),
    )
    lease_name: str = Field("lbaas-kubernetes", description="The Lease replicas compete for.")
    lease_namespace: str | None = Field(
        None,
        description=(
            "The Lease's namespace; unset: the pod's own namespace inside a cluster, "
            "`default` outside one."
        ),
    )
    lease_duration: int = Field(
        15,
        ge=1,
        description=(
            "Seconds a follower waits, after it last saw the Lease renewed, before taking "
            "it over (written as the Lease's leaseDurationSeconds)."
        ),
    )
    renew_deadline: float = Field(
        10.0,
        gt=0,
        description=(
            "Seconds the leader may go without a successful renewal before it stops acting; "
            "less than `lease_duration`, so it stops before another can take over."
        ),
    )
    retry_period: float = Field(
        2.0,
        gt=0,
        description="Seconds between attempts to renew (leader) or to acquire (followers).",
    )

    @model_validator(mode="after")
    def _leader_stops_before_the_lease_expires(self) -> KubernetesSettings:
        if not self.renew_deadline < self.lease_duration:
            raise ValueError("renew_deadline must be less than lease_duration")
        if not self.retry_period < self.renew_deadline:
            raise ValueError("retry_period must be less than renew_deadline")
        return self


class KeyManagerSettings(_Section):
    """The Barbican-compatible key manager served under ``/key-manager`` of the API."""

    enabled: bool = Field(
        True, description="Serve the key manager's v1 API under /key-manager on the API port."
    )
    kek_file: Path | None = Field(
        None,
        description=(
            "File holding the key-encryption keys that seal stored secrets (mode 0600); "
            "<state_dir>/keymanager.kek when unset. Created at first start while no secret "
            "is stored; keep it out of database backups. Every API process needs the same file."
        ),
    )
    host_href: str | None = Field(
        None,
        description=(
            "Base URL written into secret and container references (e.g. "
            "https://lb.example.com:9876/key-manager); by default the URL the request came to."
        ),
    )
    max_payload_bytes: int = Field(65536, description="Largest secret payload accepted.")
    barbican_endpoints: tuple[
        Annotated[str, Field(pattern=r"^https?://[^/?#\s]+(/[^?#\s]*)?$")], ...
    ] = Field(
        (),
        description=(
            "Base URLs of Barbicans whose secret and container references listeners and "
            "pools may name (e.g. https://barbican.example.com:9311); lbaas reads them there "
            "at validation and converge. Every other reference is looked up in lbaas's own "
            "key manager. Empty: only lbaas's own."
        ),
    )
    barbican_auth: Literal["project_header", "keystone"] = Field(
        "project_header",
        description=(
            "project_header: each request carries X-Project-Id of the load balancer's "
            "project (a Barbican without Keystone, or another lbaas). keystone: a token of "
            "the barbican_cloud entry's user, which tenants grant read access with a "
            "Barbican ACL (needs the barbican extra: openstacksdk)."
        ),
    )
    barbican_cloud: str | None = Field(
        None, description="The clouds.yaml entry whose user reads Barbican (keystone auth)."
    )
    barbican_ca_file: Path | None = Field(
        None, description="CA bundle that verifies the Barbicans' TLS (default: the system's)."
    )
    barbican_timeout: float = Field(
        10.0, gt=0, description="Seconds one request to a Barbican may take."
    )

    @model_validator(mode="after")
    def _keystone_names_a_cloud(self) -> KeyManagerSettings:
        if self.barbican_auth == "keystone" and not self.barbican_cloud:
            raise ValueError("barbican_auth = keystone needs barbican_cloud")
        return self


class AccessLogSettings(_Section):
    """Access logs of amphora listeners: one line per HTTP request and per TCP connection."""

    connection_logging: bool = Field(
        True,
        description=(
            "Log every HTTP request and TCP connection of every listener (Octavia's "
            "[haproxy_amphora] connection_logging). Off: HAProxy is rendered without logging."
        ),
    )
    directory: Path | None = Field(
        None,
        description=(
            "Where each agent writes <load balancer id>.log; <state_dir>/access-logs when unset."
        ),
    )
    socket_directory: Path = Field(
        Path("/run/lbaas/access-log"),
        description=(
            "Agent as root: where it binds each amphora's log socket (<amphora id>.sock), "
            "0710 to HAProxy's group; HAProxy's workers must reach it after dropping root, "
            "so not under the 0700 state directory. Not root: <state_dir>/amphorae-logs."
        ),
    )
    max_bytes: int = Field(
        64 * 1024 * 1024,
        ge=4096,
        description="Size at which a load balancer's log file is rotated (<id>.log.1, ...).",
    )
    backups: int = Field(5, ge=0, description="Rotated files kept per load balancer.")
    syslog_target: str = Field(
        "",
        description=(
            "host:port that every line is also forwarded to as UDP syslog (RFC 5424, "
            "facility local0); empty: not forwarded."
        ),
    )


class TierSettings(_Section):
    """The L4 tier's leases (TLB's double check)."""

    lease_renew_interval: float = Field(
        0.5,
        gt=0,
        description=(
            "Seconds between two lease renewals of a tier node's agent; the watcher sweeps "
            "twice per interval."
        ),
    )
    lease_missed_renewals: int = Field(
        3,
        ge=1,
        description=(
            "Renewals a node may miss before its lease expires; an expired node is marked "
            "down only when its health port fails as well."
        ),
    )
    lease_store_timeout: float = Field(
        0.2,
        gt=0,
        description="Seconds a renewal or read waits for a busy lease store before failing.",
    )
    health_check_tries: int = Field(
        2,
        ge=1,
        description="Connections tried to an expired node's health port before it counts as failed.",
    )
    health_check_timeout: float = Field(
        1.0,
        gt=0,
        description="Seconds each try to connect to a node's health port is given.",
    )
    groups: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description=(
            "Groups of tier nodes, by name: the node names of each (the distributed "
            "provider's node names, the fleet's host ids). Every distributed load balancer's "
            "VIP is placed in one group (tier.placement, else its flavor's tier_group, else a "
            "rendezvous hash of its id) and announced by that group's nodes; empty: no tier, "
            "an entry node instead."
        ),
    )
    placement: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Load balancer id -> group: placements that override the hash (moving a VIP "
            "to another group is changing this and reloading the control plane)."
        ),
    )
    return_mode: Literal["nat", "dsr"] = Field(
        "nat",
        description=(
            "How members answer the distributed provider's tier VIPs (a flavor's "
            "tier_return_mode overrides it per load balancer). nat: through the node "
            "that balanced the flow (masquerade; its conntrack holds the flow, so flows ECMP "
            "moves to another node are lost). dsr: directly to the client (the node marks "
            "and routes the packet to the member at L2, no per-flow state; members must be "
            "on a network the nodes reach at L2, listen on the listener's port and hold the "
            "VIP on lo with ARP off for it: docs/operations.md)."
        ),
    )
    nodes: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "lbaas tier watch/status: node name (its BGP protocol's name on the router) -> "
            "host:port of its health port. A node's lease process (lbaas.tier.node_lease) "
            "asks the other nodes' ports when the coordination engine does not answer: a "
            "majority of the tier answering keeps its VIPs announced through an engine "
            "outage; empty, it fences whenever its lease lapses."
        ),
    )
    lease_store: str = Field(
        "", description="lbaas tier watch/status: the SQLite lease store the nodes renew into."
    )
    router_bird_socket: str = Field(
        "",
        description=(
            "lbaas tier watch/status: the router BIRD's control socket; a node marked down is "
            "withdrawn by disabling the router's BGP session with it."
        ),
    )
    metrics_host: str = Field(
        "127.0.0.1", description="lbaas tier watch: where it serves /metrics."
    )
    metrics_port: int = Field(
        9181, ge=0, le=65535, description="lbaas tier watch: /metrics port (0: not served)."
    )


class CoordinationSettings(_Section):
    """Where lbaas processes on several hosts agree: the tier's leases, leaders (issue 29)."""

    engine: Literal["embedded", "postgresql", "etcd"] = Field(
        "embedded",
        description=(
            "embedded: in the process's memory (lbaas serve, one process; nothing to run). "
            "postgresql: a lease table in PostgreSQL, the database's clock (the default for "
            "several hosts). etcd: etcd's own leases (whole seconds, at least ~1.5 s)."
        ),
    )
    url: str = Field(
        "",
        description=(
            "postgresql: a postgresql:// or postgresql+psycopg:// URL (empty: database.url). "
            "etcd: http(s)://host:port of an etcd member's client URL."
        ),
    )
    table: str = Field("lbaas_lease", description="postgresql: the lease table's name.")
    timeout: float = Field(
        0.25,
        gt=0,
        description=(
            "Seconds one call to the engine may take before it counts as unavailable "
            "(a holder fences by its own clock whatever this is)."
        ),
    )
    leader_ttl: float = Field(
        5.0,
        gt=0,
        le=3600,
        description=(
            "Seconds a control-plane process leads a singleton loop (distributed status "
            "poll, housekeeping, tier watch) after its last renewal; renewed every third. "
            "A crashed leader's loops resume in another process after at most this."
        ),
    )


class KeystoneAuthtokenSettings(_Section):
    """Token validation against Keystone (api.auth_strategy = "keystone"), named as
    keystonemiddleware's [keystone_authtoken] options are."""

    www_authenticate_uri: str = Field(
        "",
        description=(
            "The Keystone endpoint clients are sent to, in a 401's "
            "`WWW-Authenticate: Keystone uri=...` header. Empty: auth_url."
        ),
    )
    auth_url: str = Field(
        "", description="Keystone's endpoint lbaas authenticates to and validates tokens at."
    )
    username: str = Field("", description="The service user that validates tokens.")
    password: SecretStr | None = Field(None, description="The service user's password.")
    user_domain_name: str = Field("Default", description="The service user's domain.")
    project_name: str = Field("", description="The service user's project.")
    project_domain_name: str = Field("Default", description="That project's domain.")
    application_credential_id: str = Field(
        "", description="An application credential instead of the user and password."
    )
    application_credential_secret: SecretStr | None = Field(
        None, description="The application credential's secret."
    )
    token_cache_time: float = Field(
        300.0,
        ge=0,
        description=(
            "Seconds a validated (or refused) token is remembered, never past its expiry: "
            "within this time a revoked token may still be accepted. 0: ask Keystone "
            "on every request."
        ),
    )
    token_cache_size: int = Field(
        10000, ge=1, description="Tokens remembered at most; the oldest are forgotten first."
    )
    service_token_roles: tuple[str, ...] = Field(
        ("service",),
        description="A service token (X-Service-Token) needs one of these roles to count.",
    )
    service_token_roles_required: bool = Field(
        False,
        description=(
            "true: a service token without one of service_token_roles is refused (401); "
            "false: it is ignored, as keystonemiddleware's default."
        ),
    )
    timeout: float = Field(10.0, gt=0, description="Seconds to wait for Keystone's answer.")

    def credentials_problem(self) -> str | None:
        """What is missing for lbaas to authenticate itself, None when nothing is."""
        if not self.auth_url:
            return "keystone_authtoken.auth_url is required"
        if self.application_credential_id:
            if self.application_credential_secret is None:
                return "keystone_authtoken.application_credential_secret is required"
            return None
        if not (self.username and self.password is not None and self.project_name):
            return (
                "keystone_authtoken needs username, password and project_name "
                "(or application_credential_id and application_credential_secret)"
            )
        return None


class Settings(_Section):
    """Everything lbaas reads from its environment."""

    state_dir: Path = Field(
        default_factory=lambda: default_state_dir(os.environ, os.geteuid()),
        description="Where SQLite, certificates and amphora files live; the default never "
        "depends on the current directory.",
        json_schema_extra={"default_text": DEFAULT_STATE_DIR_TEXT},
    )
    log_level: str = Field("INFO", description="Python logging level.")
    api: ApiSettings = ApiSettings()
    database: DatabaseSettings = DatabaseSettings()
    worker: WorkerSettings = WorkerSettings()
    quota: QuotaSettings = QuotaSettings()
    network: NetworkSettings = NetworkSettings()
    providers: ProviderSettings = ProviderSettings()
    health: HealthSettings = HealthSettings()
    agent: AgentSettings = AgentSettings()
    metadata: MetadataSettings = MetadataSettings()
    kubernetes: KubernetesSettings = KubernetesSettings()
    keymanager: KeyManagerSettings = KeyManagerSettings()
    access_log: AccessLogSettings = AccessLogSettings()
    tier: TierSettings = TierSettings()
    coordination: CoordinationSettings = CoordinationSettings()
    keystone_authtoken: KeystoneAuthtokenSettings = KeystoneAuthtokenSettings()

    @model_validator(mode="after")
    def _keystone_is_configured(self) -> Settings:
        if self.api.auth_strategy == "keystone":
            problem = self.keystone_authtoken.credentials_problem()
            if problem is not None:
                raise ValueError(f"api.auth_strategy = keystone: {problem}")
        return self

    @property
    def kek_path(self) -> Path:
        return self.keymanager.kek_file or self.state_dir / "keymanager.kek"

    @property
    def database_url(self) -> str:
        if self.database.url:
            return self.database.url
        return f"sqlite:///{(self.state_dir / 'lbaas.sqlite').resolve()}"


ENV_PREFIX = "LBAAS_"
#: ``LBAAS_`` variables that are not settings: the settings file's path, and those of the
#: test suite's tools (another OpenStack environment, golden files rewritten, a test's
#: server address). Any other is a setting, and an unknown one is refused (a misspelt
#: setting must not pass unnoticed).
NOT_SETTINGS = frozenset(
    {"LBAAS_CONFIG", "LBAAS_OPENSTACK_VENV", "LBAAS_REGEN_GOLDEN", "LBAAS_URL"}
)


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Turn LBAAS_<SECTION>__<FIELD> variables into a nested dict (values JSON or text)."""
    tree: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX) or key in NOT_SETTINGS:
            continue
        path = key[len(ENV_PREFIX) :].lower().split("__")
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        node[path[-1]] = value
    return tree


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_settings(
    path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Read the file (if any), then the environment, then explicit overrides."""
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    file_path = path or (Path(env["LBAAS_CONFIG"]) if env.get("LBAAS_CONFIG") else None)
    if file_path is not None:
        try:
            data = tomllib.loads(file_path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read settings file {file_path}: {exc}") from exc
    data = _merge(data, _env_overrides(env))
    if overrides:
        data = _merge(data, overrides)
    if not data.get("state_dir"):  # from the environment given, not this process's
        data["state_dir"] = str(default_state_dir(env, os.geteuid()))
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from exc
