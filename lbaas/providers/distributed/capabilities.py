"""What the distributed provider supports: L4 only, hashed in the kernel.

HTTP, HTTPS, TERMINATED_HTTPS and PROMETHEUS listeners are refused (400): L7 stays with the
amphora provider. Algorithms are the hashes the L4 engine has: SOURCE_IP_PORT and the lbaas
extension MAGLEV (both a Maglev table over the 5-tuple) and SOURCE_IP (over the source
address). Session persistence SOURCE_IP (the source address as key); no cookies in the
kernel. SCTP: nft accepts the rules, but this kernel has no SCTP sockets, so it was never
shown to carry traffic and is not offered.
"""

from __future__ import annotations

from lbaas.model import enums as E
from lbaas.providers.base import ProviderCapabilities

#: The flavor key of ``locality``: true prefers members on the client's own host.
PREFER_LOCAL_MEMBERS = "prefer_local_members"

DISTRIBUTED_CAPABILITIES = ProviderCapabilities(
    listener_protocols=frozenset({E.ListenerProtocol.TCP, E.ListenerProtocol.UDP}),
    pool_protocols=frozenset({E.PoolProtocol.TCP, E.PoolProtocol.UDP}),
    lb_algorithms=frozenset(
        {E.LbAlgorithm.SOURCE_IP_PORT, E.LbAlgorithm.SOURCE_IP, E.LbAlgorithm.MAGLEV}
    ),
    persistence_types=frozenset({E.PersistenceType.SOURCE_IP}),
    health_monitor_types=frozenset(
        {
            E.HealthMonitorType.TCP,
            E.HealthMonitorType.UDP_CONNECT,
            E.HealthMonitorType.HTTP,
            E.HealthMonitorType.PING,
        }
    ),
    l7_listener_protocols=frozenset(),
    flavor_keys={
        PREFER_LOCAL_MEMBERS: "When true, each node balances a client's new flows over the "
        "members on the client's own host (a port bound to that host holds the member's "
        "address) while one of them is healthy, and over every member otherwise",
    },
    boolean_keys=frozenset({PREFER_LOCAL_MEMBERS}),
)
