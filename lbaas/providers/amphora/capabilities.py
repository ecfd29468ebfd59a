"""What the amphora provider supports today; the API refuses everything else with a 400.

TERMINATED_HTTPS (no key manager yet), UDP and SCTP (no LVS/nftables data path in this
provider), SOURCE_IP_PORT, pool re-encryption and the SSL_* L7 rules (they need TLS
termination) are absent on purpose.
"""

from __future__ import annotations

from lbaas.model import enums as E
from lbaas.providers.base import ProviderCapabilities

AMPHORA_CAPABILITIES = ProviderCapabilities(
    listener_protocols=frozenset(
        {
            E.ListenerProtocol.HTTP,
            E.ListenerProtocol.HTTPS,
            E.ListenerProtocol.TCP,
            E.ListenerProtocol.PROMETHEUS,
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
        }
    ),
    flavor_keys={
        "loadbalancer_topology": "SINGLE (ACTIVE_STANDBY is not available yet)",
    },
    availability_zone_keys={
        "valid_vip_networks": "Network ids VIPs of this zone may use",
    },
)
