"""After each write the driver hands to lbaas, wait for lbaas to settle and tell Octavia.

Runs in Octavia's API process, one short thread per write (as ovn-octavia-provider's
driver reports from its own helper thread): the load balancer leaves PENDING_* in Octavia
as soon as lbaas has converged, not at the provider agent's next round. If the process
dies first, the provider agent's rounds (``agent``) send the same statuses.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from lbaas_octavia_provider.client import LbaasClient
from lbaas_octavia_provider.reporter import Reporter
from lbaas_octavia_provider.status import Key, snapshot

LOG = logging.getLogger(__name__)
# Octavia commits its own PENDING_* statuses after the driver returns: the first look
# waits that long, so a fast lbaas is not reported before Octavia wrote what it replaces.
FIRST_LOOK = 0.3
INTERVAL = 0.2
GIVE_UP = 900.0
# A failed read or report is tried again this many times, waiting 1 s, 2 s... (at most 5).
PUSH_TRIES = 6
RETRY_WAIT = 1.0


class Watcher:
    def __init__(
        self,
        client: LbaasClient,
        reporter: Reporter,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.reporter = reporter
        self._clock = clock
        self._sleep = sleep

    def watch(
        self,
        lb_id: str,
        deleted: list[Key] | None = None,
        before: Callable[[], None] | None = None,
    ) -> threading.Thread:
        """Settle and report ``lb_id`` from a thread of its own, running ``before`` first
        (what the driver can only do once Octavia has committed)."""
        thread = threading.Thread(
            target=self._run,
            args=(lb_id, deleted or [], before),
            name=f"lbaas-watch-{lb_id[:8]}",
            daemon=True,
        )
        thread.start()
        return thread

    def _run(self, lb_id: str, deleted: list[Key], before: Callable[[], None] | None) -> None:
        if before is not None:
            try:
                before()
            except Exception:  # noqa: BLE001 - reported below all the same
                LOG.exception("lbaas load balancer %s: completing the create failed", lb_id)
        self.settle(lb_id, deleted)

    def settle(self, lb_id: str, deleted: list[Key]) -> None:
        """Poll lbaas until nothing of the load balancer is PENDING_*, then push all of it
        (and ``deleted`` as DELETED)."""
        self._sleep(FIRST_LOOK)
        deadline = self._clock() + GIVE_UP
        tries = 0
        while True:
            try:
                snap = snapshot(self.client, lb_id)
                if not snap.pending or self._clock() > deadline:
                    self.reporter.push(snap, force=True, deleted=deleted)
                    return
            except Exception:  # noqa: BLE001 - retried, then left to the provider agent
                # The driver agent busy or restarting (its answer takes over 30 s under
                # load), or lbaas away beyond the client's retries. The agent's rounds
                # send only what changed since they last looked: a change lbaas converged
                # between two of them would wait for their full push, so try again here.
                tries += 1
                if tries >= PUSH_TRIES:
                    LOG.exception(
                        "lbaas status of load balancer %s not reported; the provider "
                        "agent's rounds will",
                        lb_id,
                    )
                    return
                LOG.warning("lbaas status of load balancer %s: report retried", lb_id)
                self._sleep(min(RETRY_WAIT * tries, 5.0))
                continue
            self._sleep(INTERVAL)
