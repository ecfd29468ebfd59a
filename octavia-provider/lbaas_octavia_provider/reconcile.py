"""On the provider agent's start: compare lbaas's load balancers with Octavia's.

- An lbaas load balancer Octavia does not know (its create was rolled back in Octavia
  after lbaas took it, or Octavia's was purged) is deleted from lbaas, once it is older
  than ``ORPHAN_AGE`` (a create in flight is not yet committed in Octavia: tried again
  each round until then).
- A load balancer lbaas still tags ``MARK`` (its single-call create's L7 policies were
  not all given an outcome: the driver agent or Octavia's API process restarted, or lbaas
  stayed unreachable) has Octavia's L7 policies (with their rules) that lbaas lacks, on
  listeners lbaas has, created in lbaas with Octavia's ids (``L7AfterCommit.finish``):
  they were never created, not deleted. One lbaas still converges is tried again at a
  later round.
- Any other object of Octavia's load balancer that lbaas does not have (its delete
  finished in lbaas while nobody was there to report it, or lbaas lost it) is reported
  DELETED to Octavia. The get socket gives no provisioning status, so the mark in lbaas,
  not Octavia's PENDING_CREATE, tells the two cases apart; and the load balancer's
  ``REFUSED`` tags name the policies lbaas refused, left ERROR in Octavia (with their
  rules) rather than reported DELETED.
- Everything else lbaas has is pushed, whatever Octavia was told before: an object left
  PENDING_* in Octavia by a restart takes lbaas's status.

An Octavia load balancer lbaas does not have at all cannot be listed from here (the driver
agent answers for one id at a time): docs/operations.md says what the operator does.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from lbaas_octavia_provider import translate
from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.l7_after_commit import (
    MARK,
    L7AfterCommit,
    policies,
    refused_policies,
)
from lbaas_octavia_provider.reporter import Reporter
from lbaas_octavia_provider.status import PENDING, Key, snapshot

LOG = logging.getLogger(__name__)
ORPHAN_AGE = 300.0
# How long one reconcile waits for lbaas to take a single-call create's L7 policies.
FINISH_WAIT = 60.0
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


def refused_keys(provider_lb: Any, policy_ids: set[str]) -> set[Key]:
    """The keys of Octavia's policies of ``policy_ids`` and of their rules."""
    keys: set[Key] = set()
    if not policy_ids:
        return keys
    for policy in policies(provider_lb):
        fields = translate.fields(policy)
        if str(fields["l7policy_id"]) in policy_ids:
            keys.add(("l7policies", str(fields["l7policy_id"])))
            for rule in translate.children(policy, "rules"):
                keys.add(("l7rules", str(translate.fields(rule)["l7rule_id"])))
    return keys


def age(client: LbaasClient, lb_id: str) -> float | None:
    """Seconds since lbaas created the load balancer (None: lbaas has none)."""
    shown = client.read(f"/loadbalancers/{lb_id}")
    if not shown:
        return None
    created = (shown.get("loadbalancer") or {}).get("created_at")
    if not created:
        return 0.0
    when = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (datetime.now(UTC) - when).total_seconds()


def reconcile(
    client: LbaasClient, reporter: Reporter, l7: L7AfterCommit, lbaas_ids: list[str]
) -> list[str]:
    """Reconcile each of ``lbaas_ids``; those to try again later are returned."""
    return [lb_id for lb_id in lbaas_ids if not reconcile_one(client, reporter, l7, lb_id)]


def reconcile_one(client: LbaasClient, reporter: Reporter, l7: L7AfterCommit, lb_id: str) -> bool:
    """One load balancer; False when it is to be tried again (Octavia has not committed a
    young one yet, or its single-call create's L7 policies wait for lbaas)."""
    octavia = reporter.sink.get_loadbalancer(lb_id)
    if not octavia:
        seconds = age(client, lb_id)
        if seconds is None:  # gone from both sides meanwhile
            return True
        if seconds < ORPHAN_AGE:
            return False
        LOG.warning("lbaas load balancer %s is unknown to Octavia: deleting it", lb_id)
        client.write("DELETE", f"/loadbalancers/{lb_id}?cascade=true")
        return True
    snap = snapshot(client, lb_id)
    errors: list[Key] = []
    done = True
    if snap.exists and MARK in snap.tags:
        lb_status = snap.statuses[("loadbalancers", lb_id)][0]
        if lb_status.startswith(PENDING):
            return False
        LOG.warning("load balancer %s: finishing its L7 policies in lbaas", lb_id)
        have = {object_id for collection, object_id in snap.statuses if collection == "l7policies"}
        deadline = l7.clock() + FINISH_WAIT
        errors, done = l7.finish(lb_id, octavia, lb_status, deadline, have, snap.listener_ids)
        snap = snapshot(client, lb_id)
    refused = refused_keys(octavia, refused_policies(snap.tags))
    found = octavia_objects(octavia) - set(snap.statuses) - set(errors) - refused
    missing = sorted(found) if snap.exists else []
    for collection, object_id in missing:
        LOG.warning(
            "lbaas has no %s %s of load balancer %s: reported DELETED to Octavia",
            collection,
            object_id,
            lb_id,
        )
    reporter.push(snap, force=True, deleted=missing)
    return done
