"""The provider agent: runs in Octavia's driver agent (``enabled_provider_agents = lbaas``)
and keeps Octavia told what lbaas has.

Each round lists lbaas's load balancers that an Octavia owns (tag ``octavia-provider``),
reads each one's statuses and its listeners' counters, and pushes what changed; every
``full_push_interval`` it pushes everything again, so a report lost with a restarting API
process or driver agent is made good. On start it reconciles the two sides first; a
single-call create whose L7 policies the API process gave up on (``l7_after_commit``:
lbaas away for 15 minutes) is finished by the rounds once lbaas answers, as the
reconcile finishes one whose API process died.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from lbaas_octavia_provider import translate
from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.l7_after_commit import COMMIT_WAIT, GIVE_UP, MARK, L7AfterCommit
from lbaas_octavia_provider.reconcile import age, reconcile, reconcile_one
from lbaas_octavia_provider.reporter import Reporter, Sink, driver_library
from lbaas_octavia_provider.settings import Settings, load
from lbaas_octavia_provider.status import Snapshot, snapshot

LOG = logging.getLogger(__name__)
# A single-call create's L7 work in the API process ends within COMMIT_WAIT + GIVE_UP of
# the create; a margin for the clocks of lbaas's and this host.
ABANDONED_AGE = COMMIT_WAIT + GIVE_UP + 300.0


class ExitEvent(Protocol):
    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


def owned_loadbalancers(client: LbaasClient) -> list[str]:
    """The ids of lbaas's load balancers an Octavia created through this driver."""
    found = client.read(
        "/loadbalancers", {"tags": translate.TAG, "fields": "id", "limit": "100000"}
    )
    return [str(lb["id"]) for lb in (found or {}).get("loadbalancers", [])]


class Agent:
    def __init__(
        self,
        client: LbaasClient,
        sink: Sink,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.reporter = Reporter(sink)
        self.l7 = L7AfterCommit(client, sink, clock=clock)
        self.settings = settings
        self._clock = clock
        self._last_full = float("-inf")
        self.deferred: list[str] = []  # load balancers the reconcile left for later

    def round(self) -> None:
        """One pass over every owned load balancer (and those it told Octavia of before,
        so one lbaas no longer has is reported DELETED)."""
        force = self._clock() - self._last_full >= self.settings.full_push_interval
        ids = owned_loadbalancers(self.client)
        every = dict.fromkeys([*ids, *self.reporter.known()])
        failed = [lb_id for lb_id in every if not self._one(lb_id, force)]
        if force and not failed:
            self._last_full = self._clock()

    def _one(self, lb_id: str, force: bool) -> bool:
        """Report one load balancer; False when that failed. One that fails (Octavia
        refusing its status, lbaas failing its reads) does not hold back the others: the
        rest of the round reports them, and the next round tries it again."""
        try:
            snap = snapshot(self.client, lb_id)
            self.reporter.push(snap, force=force)
            if self._abandoned(snap) and lb_id not in self.deferred:
                self.deferred.append(lb_id)
            for listener_id in snap.listener_ids:
                self._stats(listener_id)
        except Exception:  # noqa: BLE001 - logged; the round goes on with the next one
            LOG.exception("lbaas provider agent could not report load balancer %s", lb_id)
            return False
        return True

    def _abandoned(self, snap: Snapshot) -> bool:
        """An ACTIVE load balancer still marked once the API process's L7 work is surely
        over (it gave up, or died): the rounds finish it, as a reconcile would."""
        if MARK not in snap.tags:
            return False
        if snap.statuses.get(("loadbalancers", snap.loadbalancer_id), ("",))[0] != "ACTIVE":
            return False
        return (age(self.client, snap.loadbalancer_id) or 0.0) > ABANDONED_AGE

    def _reconcile(self) -> bool:
        """The start's comparison of both sides; False (tried again next round) on failure."""
        try:
            ids = owned_loadbalancers(self.client)
            self.deferred = reconcile(self.client, self.reporter, self.l7, ids)
        except Exception:  # noqa: BLE001 - the rounds go on; the next one tries again
            LOG.exception("lbaas provider agent could not reconcile with Octavia yet")
            return False
        return True

    def _reconcile_deferred(self) -> None:
        """Those the reconcile left for later, each tried again (kept when it fails)."""
        left = []
        for lb_id in self.deferred:
            try:
                done = reconcile_one(self.client, self.reporter, self.l7, lb_id)
            except Exception:  # noqa: BLE001 - logged; tried again next round
                LOG.exception("lbaas provider agent could not reconcile %s yet", lb_id)
                done = False
            if not done:
                left.append(lb_id)
        self.deferred = left

    def _stats(self, listener_id: str) -> None:
        found: Any = self.client.read(f"/listeners/{listener_id}/stats")
        if found:
            self.reporter.push_stats(listener_id, found.get("stats", {}))

    def run(self, exit_event: ExitEvent) -> None:
        """Reconcile, then a round every ``poll_interval`` until the driver agent stops.
        A failed round (lbaas or the driver agent's sockets away) is logged and retried."""
        reconciled = False
        while not exit_event.is_set():
            if not reconciled:
                reconciled = self._reconcile()
            elif self.deferred:
                self._reconcile_deferred()
            try:
                self.round()
            except Exception:  # noqa: BLE001 - the agent outlives any one failure
                LOG.exception("lbaas provider agent round failed; retrying")
            exit_event.wait(self.settings.poll_interval)


def provider_agent(exit_event: ExitEvent) -> None:
    """The ``octavia.driver_agent.provider_agents`` entry point."""
    settings = load()
    LOG.info("lbaas provider agent reports %s to Octavia", settings.url)
    client = LbaasClient(settings)
    try:
        Agent(client, driver_library(settings), settings).run(exit_event)
    finally:
        client.close()
