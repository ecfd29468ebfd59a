"""The tier as its router sees it: ``lbaas tier status`` and ``lbaas tier watch``'s metrics.

Read from what runs, for an operator who is not in the lab: the router BIRD's BGP sessions
(``show protocols``), the VIPs the router holds from each node (``show route protocol
NODE``: what the node announces, as received), and each node's last renewal in the lease
store. A watcher adds its verdict (``down``). The shape is ``lbaas lab tier``'s, so the
same collector (``lbaas.tier.metrics``) serves both. A router that does not answer shows
as ``unreachable``; a lease store that cannot be read as ``lease_store: unavailable``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from lbaas.tier.host.bird import BirdCommandFailed, BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.lease_store import LeaseReader, LeaseStoreUnavailable

DownVerdict = Callable[[str], bool]


def router_status(
    router: BirdControl,
    store: LeaseReader,
    nodes: Iterable[str],
    policy: LeasePolicy,
    down: DownVerdict | None = None,
) -> dict[str, Any]:
    try:
        sessions: dict[str, str] | str = router.bgp_sessions()
    except BirdCommandFailed:
        sessions = "unreachable"
    try:
        leases: dict[str, float] | None = store.read()
    except LeaseStoreUnavailable:
        leases = None
    now = time.time()
    shown: dict[str, Any] = {}
    for node in sorted(nodes):
        row: dict[str, Any] = {}
        if isinstance(sessions, dict):
            row["bgp"] = sessions.get(node, "none")
            try:
                row["announced"] = router.prefixes(node)
            except BirdCommandFailed:
                row["announced"] = "unreachable"
        else:
            row["bgp"] = row["announced"] = sessions
        if leases is not None and node in leases:
            age = now - leases[node]
            row["lease"] = {"age_s": round(age, 2), "held": age <= policy.lifetime}
        else:
            row["lease"] = None
        if down is not None:
            row["down"] = down(node)
        shown[node] = row
    return {
        "tier": True,
        "router": {"sessions": sessions},
        "lease_store": "unavailable" if leases is None else "ok",
        "nodes": shown,
    }
