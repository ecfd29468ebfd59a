"""Static routes: the tier without BGP, for a small deployment.

The control plane keeps, on the router, one multipath route per VIP with a next hop per
node that is up (by its lease and health check), and rewrites it when a node goes down or
comes back; the kernel spreads flows over the next hops by the same 5-tuple hash as with
BGP. What BGP + BFD add over this: a dead link is seen in 0.3 s by the router itself,
where static routes wait for the lease watcher (three missed renewals and a failed health
check, about 2 s), and the nodes need no write access to the router.

Pure: ``ip`` argument lists out.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable


def route_command(vip: str, next_hops: Iterable[str]) -> list[str]:
    """``ip`` arguments making ``vip``'s route go to exactly ``next_hops`` (none: removed)."""
    prefix = f"{ipaddress.IPv4Address(vip)}/32"
    hops = sorted({str(ipaddress.IPv4Address(hop)) for hop in next_hops})
    if not hops:
        return ["route", "del", prefix]
    argv = ["route", "replace", prefix]
    for hop in hops:
        argv += ["nexthop", "via", hop]
    return argv
