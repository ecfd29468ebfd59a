"""``lbaas lab tier``: the lab tier's nodes, their leases, announced VIPs and BGP sessions.

Read from what runs, not from memory: the router's BIRD (its sessions with the nodes), each
node's BIRD (the VIPs its ``vips`` protocol announces) and the lease store (each node's last
renewal). A BIRD that does not answer shows as ``unreachable``; a missing lease store as
``leases: null``.
"""

from __future__ import annotations

import time
from typing import Any

from lbaas.lab.lab import Lab
from lbaas.tier.host.bird import BirdCommandFailed, BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.lease_store import LeaseStoreUnavailable, SqliteLeaseStore

ROUTER = "rtr"


def _control(lab: Lab, owner: str) -> BirdControl:
    return BirdControl(lab.services_dir / "tier" / owner / "bird.ctl")


def _leases(lab: Lab) -> dict[str, float] | None:
    path = lab.services_dir / "tier" / "leases.sqlite"
    try:
        return SqliteLeaseStore(path).read() if path.exists() else None
    except LeaseStoreUnavailable:
        return None


def tier_status(lab: Lab, policy: LeasePolicy | None = None) -> dict[str, Any]:
    policy = policy or LeasePolicy()
    directory = lab.services_dir / "tier"
    owners = sorted(p.name for p in directory.iterdir() if p.is_dir()) if directory.exists() else []
    # Node directories are hN (rtr is the router's; others, such as the watcher's, no node).
    nodes = [owner for owner in owners if owner[:1] == "h" and owner[1:].isdigit()]
    try:
        sessions: dict[str, str] | str = _control(lab, ROUTER).bgp_sessions()
    except BirdCommandFailed:
        sessions = "unreachable"
    leases = _leases(lab)
    now = time.time()
    shown: dict[str, Any] = {}
    for node in nodes:
        try:
            announced: list[str] | str = _control(lab, node).prefixes("vips")
        except BirdCommandFailed:
            announced = "unreachable"
        row: dict[str, Any] = {"announced": announced}
        row["bgp"] = sessions.get(node, "none") if isinstance(sessions, dict) else sessions
        if leases is not None and node in leases:
            age = now - leases[node]
            row["lease"] = {"age_s": round(age, 2), "held": age <= policy.lifetime}
        else:
            row["lease"] = None
        shown[node] = row
    return {
        "tier": bool(owners),
        "router": {"sessions": sessions},
        "lease_store": "unavailable" if leases is None else "ok",
        "nodes": shown,
    }
