"""What the amphora provider supports today; the API refuses everything else with a 400.

UDP and SCTP (no LVS/nftables data path in this
provider), SOURCE_IP_PORT and pool re-encryption are absent on purpose.
"""

from __future__ import annotations

from lbaas.model import enums as E
from lbaas.providers.base import ProviderCapabilities

_NOT_YET = "Not honoured by this provider yet: a profile that sets it is refused."

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
    pool_protocols=frozenset(
        {
            E.PoolProtocol.HTTP,
            E.PoolProtocol.HTTPS,
            E.PoolProtocol.TCP,
            E.PoolProtocol.PROXY,
            E.PoolProtocol.PROXYV2,
        }
    ),
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
        "loadbalancer_topology": "The load balancer topology. One of: SINGLE "
        "(ACTIVE_STANDBY is not available yet)",
        "compute_flavor": f"The compute driver flavor ID. {_NOT_YET}",
        "amp_image_tag": f"The amphora image tag. {_NOT_YET}",
        "sriov_vip": f"When true, the VIP port uses SR-IOV (a VF). {_NOT_YET}",
        "allow_member_sriov": f"When true, members may use SR-IOV (VF) ports. {_NOT_YET}",
    },
    availability_zone_keys={
        "compute_zone": f"The compute availability zone. {_NOT_YET}",
        "volume_zone": f"The volume availability zone. {_NOT_YET}",
        "management_network": f"The management network ID for the amphora. {_NOT_YET}",
        "valid_vip_networks": f"The network IDs VIPs of this zone may use. {_NOT_YET}",
    },
    unhonoured_keys=frozenset(
        {
            "compute_flavor",
            "amp_image_tag",
            "sriov_vip",
            "allow_member_sriov",
            "compute_zone",
            "volume_zone",
            "management_network",
            "valid_vip_networks",
        }
    ),
    # ACTIVE_STANDBY needs keepalived pairs on two hosts (not built yet).
    profile_values={"loadbalancer_topology": frozenset({E.Topology.SINGLE})},
)
