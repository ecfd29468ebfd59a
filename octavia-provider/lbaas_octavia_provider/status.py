"""One load balancer's statuses as lbaas has them, in the keys Octavia's status socket takes.

lbaas's ``/status`` tree holds the load balancer, its listeners, the pools they send
traffic to with their members and monitors; a pool no listener uses and the L7 policies
and rules are read beside it. The answer is flat: ``(collection, id) -> (provisioning,
operating)``, the collection named as octavia-lib's status dictionary names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lbaas_octavia_provider.client import LbaasClient

Key = tuple[str, str]  # ("members", member id)
Status = tuple[str, str]  # (provisioning_status, operating_status)
PENDING = "PENDING_"
# The order octavia's driver agent applies a status dictionary in: children first.
COLLECTIONS = (
    "members",
    "healthmonitors",
    "pools",
    "l7rules",
    "l7policies",
    "listeners",
    "loadbalancers",
)


@dataclass
class Snapshot:
    """What lbaas holds of one load balancer; ``exists`` false once lbaas has none."""

    loadbalancer_id: str
    exists: bool
    statuses: dict[Key, Status] = field(default_factory=dict)
    listener_ids: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        return any(prov.startswith(PENDING) for prov, _ in self.statuses.values())


def _add(snap: Snapshot, collection: str, obj: dict[str, Any]) -> None:
    snap.statuses[(collection, str(obj["id"]))] = (
        str(obj["provisioning_status"]),
        str(obj["operating_status"]),
    )


def _add_pool(snap: Snapshot, pool: dict[str, Any]) -> None:
    _add(snap, "pools", pool)
    monitor = pool.get("health_monitor") or pool.get("healthmonitor")
    if isinstance(monitor, dict) and "provisioning_status" in monitor:
        _add(snap, "healthmonitors", monitor)
    for member in pool.get("members") or []:
        if isinstance(member, dict) and "provisioning_status" in member:
            _add(snap, "members", member)


def _loose_pools(client: LbaasClient, snap: Snapshot, pool_ids: Iterable[str]) -> None:
    """Pools the status tree leaves out (no listener sends them traffic)."""
    for pool_id in pool_ids:
        if ("pools", pool_id) in snap.statuses:
            continue
        pool = (client.read(f"/pools/{pool_id}") or {}).get("pool")
        if not pool:
            continue
        members = (client.read(f"/pools/{pool_id}/members") or {}).get("members", [])
        monitor = None
        if pool.get("healthmonitor_id"):
            found = client.read(f"/healthmonitors/{pool['healthmonitor_id']}") or {}
            monitor = found.get("healthmonitor")
        _add_pool(snap, {**pool, "members": members, "health_monitor": monitor})


def _l7(client: LbaasClient, snap: Snapshot) -> None:
    for listener_id in snap.listener_ids:
        found = client.read("/l7policies", {"listener_id": listener_id}) or {}
        for policy in found.get("l7policies", []):
            _add(snap, "l7policies", policy)
            if policy.get("rules"):
                rules = client.read(f"/l7policies/{policy['id']}/rules") or {}
                for rule in rules.get("rules", []):
                    _add(snap, "l7rules", rule)


def snapshot(client: LbaasClient, lb_id: str) -> Snapshot:
    """Read the load balancer's statuses from lbaas (a few GETs, retried while lbaas is
    briefly unreachable)."""
    shown = client.read(f"/loadbalancers/{lb_id}")
    tree = client.read(f"/loadbalancers/{lb_id}/status") if shown else None
    if not shown or not tree:
        return Snapshot(lb_id, exists=False)
    lb = tree["statuses"]["loadbalancer"]
    snap = Snapshot(lb_id, exists=True, tags=list(shown["loadbalancer"].get("tags") or []))
    _add(snap, "loadbalancers", lb)
    for listener in lb.get("listeners", []):
        _add(snap, "listeners", listener)
        snap.listener_ids.append(str(listener["id"]))
        for pool in listener.get("pools", []):
            _add_pool(snap, pool)
    _loose_pools(client, snap, [str(p["id"]) for p in shown["loadbalancer"].get("pools", [])])
    _l7(client, snap)
    return snap


def status_message(statuses: dict[Key, Status], deleted: Iterable[Key] = ()) -> dict[str, Any]:
    """octavia-lib's status dictionary: each object with both statuses, the deleted ones
    with provisioning DELETED only."""
    message: dict[str, list[dict[str, str]]] = {}
    for (collection, object_id), (prov, op) in statuses.items():
        message.setdefault(collection, []).append(
            {"id": object_id, "provisioning_status": prov, "operating_status": op}
        )
    for collection, object_id in deleted:
        message.setdefault(collection, []).append(
            {"id": object_id, "provisioning_status": "DELETED"}
        )
    return {name: message[name] for name in COLLECTIONS if name in message}
