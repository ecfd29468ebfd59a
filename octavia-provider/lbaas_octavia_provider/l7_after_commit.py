"""The L7 policies of a single-call create, which Octavia does not hand its driver.

Octavia's fully populated create builds each listener before it adds the listener's L7
policies to its database, and the listeners it passes to ``loadbalancer_create`` have no
``l7policies`` (octavia 2024-2025, seen by tests/e2e/octavia/test_provider_graph.py). So
the driver's one lbaas create carries everything else, and once Octavia has committed,
``L7AfterCommit`` reads the load balancer back through the driver agent's get socket
(where the policies and rules are, with their ids) and creates them in lbaas: after lbaas
finished the load balancer (so it does not answer 409 "immutable"), before the watcher
reports, so Octavia's policies go ACTIVE with the rest. A policy lbaas already has (a
future Octavia that hands them over) is a 409 "already an entity", which is success.

lbaas unreachable, a 5xx or a 409 naming a PENDING_* state is retried with backoff until
``GIVE_UP``; only a refusal (any other 4xx, or lbaas's load balancer in ERROR) reports the
policy and its rules ERROR to Octavia at once. The work outstanding is written down in
lbaas, where both of the driver's processes read it: the create tags the load balancer
``MARK`` and the tag is removed once every policy has its outcome. A driver agent that
restarts in between finds the tag (``reconcile``) and finishes the work rather than taking
Octavia's policies lbaas lacks for deleted ones. A policy lbaas refused stays ERROR in
Octavia, where its owner sees why and deletes it: the same PUT that removes the mark tags
the load balancer ``REFUSED`` + the policy's id, so that a later reconciliation does not
take the policy lbaas lacks for one deleted and report it DELETED (which would make it
vanish from Octavia with its error).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from typing import Any

from lbaas_octavia_provider import translate
from lbaas_octavia_provider.client import LbaasClient, LbaasError, Unreachable
from lbaas_octavia_provider.reporter import Sink
from lbaas_octavia_provider.status import PENDING, Key

LOG = logging.getLogger(__name__)
MARK = "octavia-l7-pending"
REFUSED = "octavia-l7-refused:"
# How long to wait for Octavia's commit, and for lbaas to settle and take the policies.
COMMIT_WAIT = 60.0
GIVE_UP = 900.0
INTERVAL = 0.2
FIRST_WAIT = 0.5
MAX_WAIT = 10.0
_ERROR = {"provisioning_status": "ERROR", "operating_status": "ERROR"}


def policies(octavia: Any, listener_ids: Collection[str] | None = None) -> list[Any]:
    """Octavia's L7 policies of the load balancer (of those listeners only, when given),
    in the order of their positions."""
    found = [
        policy
        for listener in translate.children(octavia, "listeners")
        if listener_ids is None or str(translate.fields(listener)["listener_id"]) in listener_ids
        for policy in translate.children(listener, "l7policies")
    ]
    return sorted(found, key=lambda p: int(translate.fields(p).get("position") or 0))


def refused_policies(tags: Collection[str]) -> set[str]:
    """The ids of the policies lbaas refused, as the load balancer's tags record them."""
    return {tag.removeprefix(REFUSED) for tag in tags if tag.startswith(REFUSED)}


def transient(exc: Exception) -> bool:
    """An answer lbaas may change its mind about: worth asking again later."""
    if isinstance(exc, Unreachable):
        return True
    if not isinstance(exc, LbaasError):
        return False
    return exc.status >= 500 or (
        exc.status == 409 and ("immutable" in exc.fault or PENDING in exc.fault)
    )


class L7AfterCommit:
    def __init__(
        self,
        client: LbaasClient,
        sink: Sink,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.sink = sink
        self.clock = clock
        self._sleep = sleep

    def run(self, lb_id: str) -> None:
        """The API process's part: once Octavia committed, create every policy."""
        octavia = self._committed(lb_id)
        if octavia is None:
            LOG.warning("load balancer %s not found in Octavia: no L7 policies added", lb_id)
            return
        deadline = self.clock() + GIVE_UP
        self.finish(lb_id, octavia, self._settled(lb_id, deadline), deadline)

    def finish(
        self,
        lb_id: str,
        octavia: Any,
        lb_status: str | None,
        deadline: float,
        have: Collection[str] = (),
        listener_ids: Collection[str] | None = None,
    ) -> tuple[list[Key], bool]:
        """Create Octavia's policies lbaas does not ``have`` (on ``listener_ids``), then
        remove the mark. ``lb_status`` is lbaas's settled status of the load balancer (None:
        not read in time). Returns what was reported ERROR, and False when lbaas could not
        be reached in time, so the mark stays for the provider agent to finish the work."""
        project = translate.fields(octavia).get("project_id")
        wanted = [
            translate.policy_create_body(p)
            for p in policies(octavia, listener_ids)
            if str(translate.fields(p)["l7policy_id"]) not in have
        ]
        if lb_status != "ACTIVE":  # an lbaas in ERROR takes no child; the mark stays
            why = f"lbaas's load balancer is {lb_status or 'not answering'}"
            return [key for body in wanted for key in self._error(body, why)], bool(lb_status)
        errors: list[Key] = []
        refused: list[str] = []
        decided = True
        for body in wanted:
            outcome = self._create(project, body, deadline)
            if outcome is not None:
                errors += self._error(body, str(outcome))
                decided = decided and not transient(outcome)
                refused.append(str(body["l7policy"]["id"]))
        return errors, decided and self._unmark(lb_id, deadline, refused)

    def _committed(self, lb_id: str) -> Any | None:
        """Octavia's load balancer once its create is committed (None before, or never)."""
        deadline = self.clock() + COMMIT_WAIT
        while self.clock() < deadline:
            try:
                found = self.sink.get_loadbalancer(lb_id)
            except Exception:  # noqa: BLE001 - the driver agent busy: asked again
                LOG.warning("load balancer %s: the driver agent did not answer", lb_id)
                found = None
            if found:
                return found
            self._sleep(INTERVAL)
        return None

    def _settled(self, lb_id: str, deadline: float) -> str | None:
        """lbaas's status of the load balancer once it is not PENDING_* (None: lbaas did
        not answer, or stayed PENDING_*, until ``deadline``)."""
        while self.clock() < deadline:
            try:
                shown = self.client.read(f"/loadbalancers/{lb_id}") or {}
            except (LbaasError, Unreachable) as exc:
                LOG.warning("load balancer %s: lbaas's status not read: %s", lb_id, exc)
                shown = {"loadbalancer": {"provisioning_status": PENDING}}
            status = str((shown.get("loadbalancer") or {}).get("provisioning_status", "DELETED"))
            if not status.startswith(PENDING):
                return status
            self._sleep(INTERVAL)
        return None

    def _retried(self, call: Callable[[], None], what: str, deadline: float) -> Exception | None:
        """``call`` until it succeeds (None), lbaas refuses it, or ``deadline`` passes with
        lbaas still unreachable or busy (that last error returned)."""
        wait = FIRST_WAIT
        while True:
            try:
                call()
                return None
            except (LbaasError, Unreachable) as exc:
                if not transient(exc) or self.clock() + wait > deadline:
                    return exc
                LOG.warning("%s: retried in %.1f s: %s", what, wait, exc)
            self._sleep(wait)
            wait = min(wait * 2, MAX_WAIT)

    def _create(
        self, project: str | None, body: dict[str, Any], deadline: float
    ) -> Exception | None:
        what = f"L7 policy {body['l7policy']['id']}"
        return self._retried(
            lambda: self.client.write("POST", "/l7policies", project, body), what, deadline
        )

    def _unmark(self, lb_id: str, deadline: float, refused: Collection[str] = ()) -> bool:
        tags = [translate.TAG, *(f"{REFUSED}{policy_id}" for policy_id in refused)]
        body = {"loadbalancer": {"tags": tags}}
        failed = self._retried(
            lambda: self.client.write("PUT", f"/loadbalancers/{lb_id}", None, body),
            f"load balancer {lb_id}'s tag {MARK}",
            deadline,
        )
        if failed is not None:  # the provider agent tries again: nothing left to create
            LOG.warning("load balancer %s keeps its tag %s: %s", lb_id, MARK, failed)
        return failed is None

    def _error(self, body: dict[str, Any], why: str) -> list[Key]:
        """Report one policy and its rules ERROR to Octavia; their keys."""
        policy = body["l7policy"]
        LOG.error("lbaas did not take L7 policy %s: %s", policy["id"], why)
        rules = [{"id": r["id"], **_ERROR} for r in policy.get("rules", [])]
        self.sink.update_loadbalancer_status(
            {"l7rules": rules, "l7policies": [{"id": policy["id"], **_ERROR}]}
        )
        return [("l7policies", str(policy["id"])), *(("l7rules", str(r["id"])) for r in rules)]
