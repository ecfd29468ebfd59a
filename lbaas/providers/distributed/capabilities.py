"""What the distributed provider supports: L4 only, hashed in the kernel.

HTTP, HTTPS, TERMINATED_HTTPS and PROMETHEUS listeners are refused (400): L7 stays with the
amphora provider. Algorithms are the hashes the L4 engine has: SOURCE_IP_PORT and the lbaas
extension MAGLEV (both a Maglev table over the 5-tuple) and SOURCE_IP (over the source
address). Session persistence SOURCE_IP (the source address as key); no cookies in the
kernel. SCTP: nft accepts the rules, but this kernel has no SCTP sockets, so it was never
shown to carry traffic and is not offered.

Flavor keys: ``prefer_local_members`` (``locality``), and, in a deployment with an L4 tier,
``tier_group`` (the group that announces the VIP, one of ``tier.groups``) and
``tier_return_mode`` (``nat`` or ``dsr``, for this load balancer instead of
``tier.return_mode``). Without a tier a profile setting either is refused (400).

Listener options: a UDP listener's ``timeout_client_data`` and ``timeout_member_data`` set
its flows' idle timeout (the shorter, in whole seconds); everything else of
``LISTENER_OPTIONS`` is taken at Octavia's default only (``OPTION_NOTES`` says why).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from lbaas.model import enums as E
from lbaas.providers.base import ProviderCapabilities

#: Why the kernel engine refuses each listener option it does not enforce (said in the 400).
OPTION_NOTES = {
    "connection_limit": "Each node balances its own clients' flows (the nodes of an L4 "
    "tier group share a VIP's), so no node sees the listener's whole count to cap it",
    "timeout_client_data": "The kernel forwards TCP without ending idle connections "
    "(forgetting a flow does not close it); on UDP listeners the shorter of "
    "timeout_client_data and timeout_member_data is the flows' idle timeout",
    "timeout_member_connect": "The kernel forwards the client's own connection attempt "
    "and has no connection to a member of its own to time",
    "timeout_tcp_inspect": "The kernel balances on addresses and ports and never waits "
    "for content to inspect",
}
OPTION_NOTES["timeout_member_data"] = OPTION_NOTES["timeout_client_data"]
_UDP = frozenset({E.ListenerProtocol.UDP})

#: The flavor key of ``locality``: true prefers members on the client's own host.
PREFER_LOCAL_MEMBERS = "prefer_local_members"
#: The flavor key naming the tier group that announces the VIP (``placement``).
TIER_GROUP = "tier_group"
#: The flavor key choosing how members answer the VIP (``tier.return_mode`` otherwise).
TIER_RETURN_MODE = "tier_return_mode"
RETURN_MODES = frozenset({"nat", "dsr"})

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
    # Each node's nftables drops other sources before the Maglev decision (``lbaas.l4.nft``).
    allowed_cidrs_protocols=frozenset({E.ListenerProtocol.TCP, E.ListenerProtocol.UDP}),
    listener_options={"timeout_client_data": _UDP, "timeout_member_data": _UDP},
    whole_second_timeouts=_UDP,
    refusal_notes=OPTION_NOTES,
    flavor_keys={
        PREFER_LOCAL_MEMBERS: "When true, each node balances a client's new flows over the "
        "members on the client's own host (a port bound to that host holds the member's "
        "address) while one of them is healthy, and over every member otherwise",
        TIER_GROUP: "The L4 tier group whose nodes announce the VIP (one of the deployment's "
        "tier.groups; default: a hash of the load balancer id)",
        TIER_RETURN_MODE: "How members answer the VIP's flows from the tier: nat (through "
        "the node) or dsr (directly; members hold the VIP on lo). Default: tier.return_mode",
    },
    boolean_keys=frozenset({PREFER_LOCAL_MEMBERS}),
    # Each node deletes a down member's conntrack entries (``lbaas.l4.engine``): a TCP
    # connection's next packet is answered with a reset, a UDP flow's is balanced again.
    member_down_policies={
        E.PoolProtocol.TCP: frozenset({E.MemberDownPolicy.CUT}),
        E.PoolProtocol.UDP: frozenset({E.MemberDownPolicy.REROUTE}),
    },
)


def distributed_capabilities(tier_groups: Collection[str]) -> ProviderCapabilities:
    """The capabilities with the tier keys' values this deployment has (none: no tier)."""
    note = (
        f"the L4 tier groups here are {', '.join(sorted(tier_groups))}"
        if tier_groups
        else "this deployment has no L4 tier (tier.groups)"
    )
    return dataclasses.replace(
        DISTRIBUTED_CAPABILITIES,
        profile_values={
            TIER_GROUP: frozenset(tier_groups),
            TIER_RETURN_MODE: RETURN_MODES if tier_groups else frozenset(),
        },
        profile_value_notes={TIER_GROUP: note, TIER_RETURN_MODE: note},
    )
