"""What the amphora provider supports today; the API refuses everything else with a 400.

SCTP (this kernel has no SCTP sockets to show it with) and SOURCE_IP_PORT are absent on
purpose; TERMINATED_HTTPS, pool re-encryption and the SSL_* L7 rules take their
certificates from the key manager. UDP listeners and pools are balanced by the L4 engine
inside the amphora's namespace, so only agents in netns mode offer them
(``amphora_capabilities``); their pools take ROUND_ROBIN (a Maglev hash of the 5-tuple:
per flow, not per packet) and SOURCE_IP, as Octavia's LVS takes rr and sh; least
connections has no kernel equivalent here.
"""

from __future__ import annotations

import dataclasses

from lbaas.model import enums as E
from lbaas.providers.base import ProviderCapabilities, every_listener_option

_NOT_YET = "Not honoured by this provider yet: a profile that sets it is refused."

#: The pool protocols HAProxy balances (UDP pools are the kernel's).
_HAPROXY_POOLS = (
    E.PoolProtocol.HTTP,
    E.PoolProtocol.HTTPS,
    E.PoolProtocol.TCP,
    E.PoolProtocol.PROXY,
    E.PoolProtocol.PROXYV2,
)

AMPHORA_CAPABILITIES = ProviderCapabilities(
    listener_protocols=frozenset(
        {
            E.ListenerProtocol.HTTP,
            E.ListenerProtocol.HTTPS,
            E.ListenerProtocol.TCP,
            E.ListenerProtocol.PROMETHEUS,
            E.ListenerProtocol.TERMINATED_HTTPS,
        }
    ),
    pool_protocols=frozenset(_HAPROXY_POOLS),
    # HAProxy's ``ssl`` server option (``render/haproxy/tls.py``); UDP pools are the
    # kernel's, which has no TLS.
    pool_tls_protocols=frozenset(_HAPROXY_POOLS),
    lb_algorithms=frozenset(
        {E.LbAlgorithm.ROUND_ROBIN, E.LbAlgorithm.LEAST_CONNECTIONS, E.LbAlgorithm.SOURCE_IP}
    ),
    persistence_types=frozenset(E.PersistenceType),
    health_monitor_types=frozenset(
        {
            E.HealthMonitorType.HTTP,
            E.HealthMonitorType.HTTPS,
            E.HealthMonitorType.TCP,
            E.HealthMonitorType.TLS_HELLO,
            E.HealthMonitorType.PING,
        }
    ),
    l7_actions=frozenset(E.L7PolicyAction),
    # L7 policies are HTTP routing: HAProxy evaluates them in HTTP mode only.
    l7_listener_protocols=frozenset({E.ListenerProtocol.HTTP, E.ListenerProtocol.TERMINATED_HTTPS}),
    # HAProxy's frontends reject other sources (tcp-request connection reject); UDP, where
    # offered, is filtered by the namespace's nftables (``lbaas.amphora.vip_filter``).
    allowed_cidrs_protocols=frozenset(
        {
            E.ListenerProtocol.HTTP,
            E.ListenerProtocol.HTTPS,
            E.ListenerProtocol.TCP,
            E.ListenerProtocol.PROMETHEUS,
            E.ListenerProtocol.TERMINATED_HTTPS,
        }
    ),
    # HAProxy has them all: maxconn, timeout client/connect/server, inspect-delay.
    listener_options=every_listener_option(
        frozenset(E.ListenerProtocol) - {E.ListenerProtocol.UDP, E.ListenerProtocol.SCTP}
    ),
    l7_rule_types=frozenset(
        {
            E.L7RuleType.HOST_NAME,
            E.L7RuleType.PATH,
            E.L7RuleType.FILE_TYPE,
            E.L7RuleType.HEADER,
            E.L7RuleType.COOKIE,
            E.L7RuleType.SSL_CONN_HAS_CERT,
            E.L7RuleType.SSL_VERIFY_RESULT,
            E.L7RuleType.SSL_DN_FIELD,
        }
    ),
    # The keys Octavia's amphora driver lists, so clients find the names they know; all
    # but the topology are not honoured yet and say so.
    flavor_keys={
        # Octavia's own words, which clients and octavia-tempest-plugin compare against
        # (ACTIVE_STANDBY needs agents in netns mode: docs/api-compat.md).
        "loadbalancer_topology": "The load balancer topology. One of: SINGLE - One amphora "
        "per load balancer. ACTIVE_STANDBY - Two amphora per load balancer.",
        "compute_flavor": f"The compute driver flavor ID. {_NOT_YET}",
        "amp_image_tag": f"The amphora image tag. {_NOT_YET}",
        "sriov_vip": f"When true, the VIP port uses SR-IOV (a VF). {_NOT_YET}",
        "allow_member_sriov": f"When true, members may use SR-IOV (VF) ports. {_NOT_YET}",
    },
    availability_zone_keys={
        "compute_zone": "The compute availability zone: amphorae go to agent hosts that "
        "declare this zone (agent.zone)",
        "volume_zone": f"The volume availability zone. {_NOT_YET}",
        "management_network": f"The management network ID for the amphora. {_NOT_YET}",
        "valid_vip_networks": "The network IDs VIPs of this zone may use (a list); a load "
        "balancer created in the zone with its VIP on another network is refused",
    },
    unhonoured_keys=frozenset(
        {
            "compute_flavor",
            "amp_image_tag",
            "sriov_vip",
            "allow_member_sriov",
            "volume_zone",
            "management_network",
        }
    ),
    profile_values={"loadbalancer_topology": frozenset(E.Topology)},
    # HAProxy's ``on-marked-down shutdown-sessions`` closes a down server's connections;
    # nothing moves a connection to another server mid-stream (docs/architecture.md).
    member_down_policies=dict.fromkeys(_HAPROXY_POOLS, frozenset({E.MemberDownPolicy.CUT})),
)

#: Loopback agents (no root, no namespaces) have no link to move a VIP on: SINGLE only.
LOOPBACK_CAPABILITIES = dataclasses.replace(
    AMPHORA_CAPABILITIES,
    profile_values={"loadbalancer_topology": frozenset({E.Topology.SINGLE})},
    profile_value_notes={
        "loadbalancer_topology": "ACTIVE_STANDBY needs agents in netns mode; this "
        "deployment runs them in loopback mode"
    },
)

#: What UDP pools of the amphora provider take (the kernel's Maglev table, lbaas.l4).
UDP_LB_ALGORITHMS = frozenset({E.LbAlgorithm.ROUND_ROBIN, E.LbAlgorithm.SOURCE_IP})
#: What the kernel enforces of a UDP listener's options (``lbaas.l4.listener_limits``).
_KERNEL_UDP_OPTIONS = ("connection_limit", "timeout_client_data", "timeout_member_data")
#: Why the kernel's UDP balancing refuses the other two unless at Octavia's default.
UDP_OPTION_NOTES = {
    "timeout_member_connect": "UDP listeners are balanced by the kernel, which has no "
    "connection to a member to open, so nothing to time",
    "timeout_tcp_inspect": "UDP listeners are balanced by the kernel, which never waits "
    "for content to inspect",
}
_LOOPBACK_UDP = (
    "UDP is balanced in the kernel inside an amphora namespace: it needs the agents in "
    "netns mode (agent.mode = netns), and this deployment runs them in loopback mode"
)


def amphora_capabilities(netns: bool) -> ProviderCapabilities:
    """The capabilities with UDP when the agents run in netns mode; a note on it otherwise."""
    caps = AMPHORA_CAPABILITIES
    if not netns:
        notes = {E.ListenerProtocol.UDP.value: _LOOPBACK_UDP}
        notes[E.HealthMonitorType.UDP_CONNECT.value] = _LOOPBACK_UDP
        return dataclasses.replace(LOOPBACK_CAPABILITIES, refusal_notes=notes)
    return dataclasses.replace(
        caps,
        listener_protocols=caps.listener_protocols | {E.ListenerProtocol.UDP},
        allowed_cidrs_protocols=caps.allowed_cidrs_protocols | {E.ListenerProtocol.UDP},
        pool_protocols=caps.pool_protocols | {E.PoolProtocol.UDP},
        health_monitor_types=caps.health_monitor_types | {E.HealthMonitorType.UDP_CONNECT},
        lb_algorithms_by_pool_protocol={E.PoolProtocol.UDP: UDP_LB_ALGORITHMS},
        # The kernel forgets a down member's UDP flows: their next datagrams are balanced.
        member_down_policies={
            **caps.member_down_policies,
            E.PoolProtocol.UDP: frozenset({E.MemberDownPolicy.REROUTE}),
        },
        datagram_ip_versions=frozenset({4}),
        listener_options={
            name: protocols | ({E.ListenerProtocol.UDP} if name in _KERNEL_UDP_OPTIONS else set())
            for name, protocols in caps.listener_options.items()
        },
        whole_second_timeouts=frozenset({E.ListenerProtocol.UDP}),
        refusal_notes=UDP_OPTION_NOTES,
    )
