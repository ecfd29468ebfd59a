"""On the provider agent's start: compare lbaas's load balancers with Octavia's.

- An lbaas load balancer Octavia does not know (its create was rolled back in Octavia
  after lbaas took it, or Octavia's was purged) is deleted from lbaas, once it is older
  than ``ORPHAN_AGE`` (a create in flight is not yet committed in Octavia).
- An object of Octavia's load balancer that lbaas does not have (its delete finished in
  lbaas while nobody was there to report it) is reported DELETED to Octavia.
- Everything else lbaas has is pushed, whatever Octavia was told before: an object left
  PENDING_* in Octavia by a restart takes lbaas's status.

An Octavia load balancer lbaas does not have at all cannot be listed from here (the driver
agent answers for one id at a time): docs/operations.md says what the operator does.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.reporter import Reporter
from lbaas_octavia_provider.status import Key, snapshot

LOG = logging.getLogger(__name__)
ORPHAN_AGE = 300.0
# octavia-lib's provider dictionary: the children of a load balancer, and where they nest.
_NESTED = {
    "listeners": ("listener_id", "l7policies"),
    "pools": ("pool_id", "members"),
    "l7policies": ("l7policy_id", "rules"),
    "members": ("member_id", None),
    "rules": ("l7rule_id", None),
}
_COLLECTION = {"rules": "l7rules"}


def octavia_objects(provider_lb: Any) -> set[Key]:
    """Every (collection, id) of a load balancer as the driver agent gives it (octavia-lib's
    ``LoadBalancer``, or its dictionary)."""
    if hasattr(provider_lb, "to_dict"):
        provider_lb = provider_lb.to_dict(recurse=True)
    found: set[Key] = {("loadbalancers", str(provider_lb["loadbalancer_id"]))}

    def walk(name: str, items: Any) -> None:
        id_key, below = _NESTED[name]
        for item in items or []:
            if not isinstance(item, dict) or not item.get(id_key):
                continue
            found.add((_COLLECTION.get(name, name), str(item[id_key])))
            monitor = item.get("healthmonitor")
            if isinstance(monitor, dict) and monitor.get("healthmonitor_id"):
                found.add(("healthmonitors", str(monitor["healthmonitor_id"])))
            if below:
                walk(below, item.get(below))

    walk("listeners", provider_lb.get("listeners"))
    walk("pools", provider_lb.get("pools"))
    return found


def _age(client: LbaasClient, lb_id: str) -> float:
    shown = client.read(f"/loadbalancers/{lb_id}") or {}
    created = (shown.get("loadbalancer") or {}).get("created_at")
    if not created:
        return 0.0
    when = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (datetime.now(UTC) - when).total_seconds()


def reconcile(client: LbaasClient, reporter: Reporter, lbaas_ids: list[str]) -> None:
    for lb_id in lbaas_ids:
        octavia = reporter.sink.get_loadbalancer(lb_id)
        if not octavia:
            if _age(client, lb_id) >= ORPHAN_AGE:
                LOG.warning("lbaas load balancer %s is unknown to Octavia: deleting it", lb_id)
                client.write("DELETE", f"/loadbalancers/{lb_id}?cascade=true")
            continue
        snap = snapshot(client, lb_id)
        missing = sorted(octavia_objects(octavia) - set(snap.statuses)) if snap.exists else []
        for collection, object_id in missing:
            LOG.warning(
                "lbaas has no %s %s of load balancer %s: reported DELETED to Octavia",
                collection,
                object_id,
                lb_id,
            )
        reporter.push(snap, force=True, deleted=missing)
