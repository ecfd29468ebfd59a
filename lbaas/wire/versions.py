"""The version of the controller-agent wire, which both sides state on every exchange.

``WIRE_VERSION`` names the language this code speaks: 1 is the wire of the release before
issue 35's changes (commit 6824d05), which states nothing; 2 adds the certificate routes
(``lbaas.wire.certificates``), the spares route (``lbaas.wire.spares``) and a pool's
``member_down`` other than keep in amphora and L4 specs, and a UDP listener's
``connection_limit`` and ``idle_timeout``. Each request the controller sends
carries ``HEADER`` with its version and each answer of the agent carries the agent's, so
each side knows the other's from the exchange it is already having, without an extra
call; ``GET /v1/info`` says it too (``AgentInfo.wire_version``), to a controller that
stated at least 2 (a version-1 controller refuses fields it does not know).

A side that meets an older peer speaks that peer's language: it leaves out what the
peer cannot read and does not ask it what it cannot answer (``FEATURES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

WIRE_VERSION: Final = 2
#: What a peer that states nothing speaks (the release before versions were stated).
UNSTATED: Final = 1
HEADER: Final = "Lbaas-Wire-Version"

#: The first version having each feature the controller chooses per agent.
FEATURES: Final[Mapping[str, int]] = {
    "certificate_renewal": 2,  # GET/PUT /v1/certificate, POST /v1/certificate/request
    "ca_rotation": 2,  # PUT /v1/trust
    "spares": 2,  # GET /v1/spares
    "member_down": 2,  # member_down cut or reroute in UDP and L4 listeners
    "flow_limits": 2,  # a UDP listener's connection_limit and idle_timeout
    # A new amphora's VIP announced once HAProxy serves it (IPv6 without DAD): a SINGLE
    # failover may build the replacement while the old amphora still holds the VIP.
    "vip_take_over": 2,
}


def stated(value: str | None) -> int:
    """The version a header value states: ``UNSTATED`` when absent; a value that is not a
    positive number counts as unstated too (a peer we cannot read speaks the oldest)."""
    if value is None:
        return UNSTATED
    try:
        number = int(value.strip())
    except ValueError:
        return UNSTATED
    return number if number >= 1 else UNSTATED


def speaks(peer_version: int, feature: str) -> bool:
    """Whether a peer of ``peer_version`` has ``feature`` (a key of ``FEATURES``)."""
    return peer_version >= FEATURES[feature]
