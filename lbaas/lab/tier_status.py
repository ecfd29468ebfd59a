"""``lbaas lab tier``: the lab tier's nodes, their leases, announced VIPs and BGP sessions.

Read from what runs, not from memory: the router's BIRD (its sessions with the nodes), each
node's BIRD (the VIPs its ``vips`` protocol announces) and the leases (each node's last
renewal) on the coordination engine, as ``lbaas tier status`` reads them in the router's
namespace (``lbaas lab up --tier``): the leases are nowhere in a file. A BIRD that does not
answer shows as ``unreachable``; leases that cannot be read as ``lease_store: unavailable``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lbaas.lab import names as n
from lbaas.lab import processes
from lbaas.lab.base import LabError
from lbaas.lab.lab import Lab
from lbaas.tier.host.bird import BirdCommandFailed, BirdControl

ROUTER = "rtr"


def watch_directory(lab: Lab) -> Path:
    """The lease watcher's directory (``lbaas.lab.tier_watch``): the router host's own."""
    return lab.services_dir / "tier" / n.WATCHER_DIRECTORY


def watch_settings_file(lab: Lab) -> Path:
    return watch_directory(lab) / "watch.toml"


def _control(lab: Lab, owner: str) -> BirdControl:
    return BirdControl(lab.services_dir / "tier" / owner / "bird.ctl")


def _engine_leases(lab: Lab) -> dict[str, dict[str, Any] | None] | None:
    """The leases on the coordination engine, which only the lab's network reaches: what
    ``lbaas tier status`` says, run with the watcher's settings in the router's namespace."""
    settings = watch_settings_file(lab)
    if not settings.exists():
        return None
    argv = [sys.executable, "-m", "lbaas.cli", "--config", str(settings), "tier", "status"]
    try:
        shown = json.loads(processes.output_of(lab.names.router, argv))
    except (LabError, ValueError):
        return None
    if shown.get("lease_store") != "ok":
        return None
    return {node: row.get("lease") for node, row in shown["nodes"].items()}


def tier_status(lab: Lab) -> dict[str, Any]:
    directory = lab.services_dir / "tier"
    owners = sorted(p.name for p in directory.iterdir() if p.is_dir()) if directory.exists() else []
    # Node directories are hN (rtr is the router's; others, such as the watcher's, no node).
    nodes = [owner for owner in owners if owner[:1] == "h" and owner[1:].isdigit()]
    try:
        sessions: dict[str, str] | str = _control(lab, ROUTER).bgp_sessions()
    except BirdCommandFailed:
        sessions = "unreachable"
    leases = _engine_leases(lab)
    shown: dict[str, Any] = {}
    for node in nodes:
        try:
            announced: list[str] | str = _control(lab, node).prefixes("vips")
        except BirdCommandFailed:
            announced = "unreachable"
        row: dict[str, Any] = {"announced": announced}
        row["bgp"] = sessions.get(node, "none") if isinstance(sessions, dict) else sessions
        row["lease"] = leases.get(node) if leases is not None else None
        shown[node] = row
    return {
        "tier": bool(owners),
        "router": {"sessions": sessions},
        "lease_store": "unavailable" if leases is None else "ok",
        "nodes": shown,
    }
