"""Runs the election of ``election`` against the Kubernetes API, and the controller only
while this replica leads.

Every ``retry_period`` the Lease is read and written (created, taken over or renewed, as
``Election`` decides); a follower does nothing else. When this replica becomes the
leader a *term* starts: a fresh controller (its own cache, watches, converge workers and
resyncs, built by the ``lead`` callable) runs as a task. The term is cancelled as soon as
this replica no longer leads (the renew deadline passed, or the Lease was seen held by
another), and on a clean stop, before the Lease is released; a controller that failed
ends the elector too, after the release. A write is given only the time left before the
renew deadline, so a hanging request cannot keep a leader acting past it. What is already
in flight when a term is cancelled (a blocking Octavia call on a worker thread) finishes
on its own; the next leader's converge finds its result by tag.

Each transition is logged; ``leading`` and ``terms`` tell a caller (or a test) the state.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable

from lbaas.errors import LbaasError
from lbaas.integrations.kubernetes.base import Conflict, Json, LeaseApi
from lbaas.integrations.kubernetes.election import Action, Attempt, Election

LOG = logging.getLogger(__name__)
Sleep = Callable[[float], Awaitable[None]]


def replica_identity() -> str:
    """Host name, process id and a random suffix: unique even for a restarted process
    that got the same pid in a new container."""
    return f"{socket.gethostname()}_{os.getpid()}_{secrets.token_hex(4)}"


class LeaderElector:
    def __init__(self, leases: LeaseApi, election: Election, sleep: Sleep = asyncio.sleep) -> None:
        self._leases = leases
        self._election = election
        self._sleep = sleep
        self._holder_seen: str | None = None
        self.terms = 0
        """How many times this replica has started leading."""

    @property
    def leading(self) -> bool:
        return self._election.leads()

    @property
    def identity(self) -> str:
        return self._election.identity

    def _where(self) -> str:
        election = self._election
        return f"Lease {election.lease_namespace}/{election.lease_name}"

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Until cancelled (or until a term's controller fails: its error is raised)."""
        term: asyncio.Task[None] | None = None
        try:
            while True:
                await self.try_once()
                term = await self._reconcile(term, lead)
                await self._sleep(self._pause())
        finally:
            if term is not None:
                await self._end_term(term, "stopping", logging.INFO)
            await self._release()

    def _pause(self) -> float:
        retry = self._election.timings.retry_period
        if self._election.leads():
            return min(retry, self._election.time_left())
        return retry

    async def try_once(self) -> None:
        """One read and (if the election says so) one write of the Lease."""
        election = self._election
        budget = election.time_left() if election.leads() else election.timings.renew_deadline
        try:
            async with asyncio.timeout(budget):
                lease = await self._leases.get_lease(election.lease_namespace, election.lease_name)
                attempt = election.begin(lease)
                self._note_holder(attempt)
                if attempt.action is not Action.WAIT:
                    written = await self._write(attempt)
                    election.succeeded(attempt, written)
        except Conflict:
            LOG.debug("%s: another replica wrote it first", self._where())
        except TimeoutError:
            LOG.warning("%s: no answer within %.1fs", self._where(), budget)
        except LbaasError as exc:
            LOG.warning("%s: %s", self._where(), exc)

    async def _write(self, attempt: Attempt) -> Json:
        election = self._election
        if attempt.action is Action.CREATE:
            return await self._leases.create_lease(attempt.body)
        return await self._leases.update_lease(
            election.lease_namespace, election.lease_name, attempt.body
        )

    def _note_holder(self, attempt: Attempt) -> None:
        if attempt.action is Action.WAIT and attempt.holder != self._holder_seen:
            LOG.info("following: %s is held by %s", self._where(), attempt.holder)
        self._holder_seen = attempt.holder

    async def _reconcile(
        self, term: asyncio.Task[None] | None, lead: Callable[[], Awaitable[None]]
    ) -> asyncio.Task[None] | None:
        if term is not None and term.done():
            term.result()  # a controller that failed ends the elector with its error
            LOG.warning("the controller returned; it is started again while leading")
            term = None
        leads = self._election.leads()
        if leads and term is None:
            self.terms += 1
            LOG.info("leading: this replica (%s) holds %s", self.identity, self._where())

            async def run_term() -> None:
                await lead()

            return asyncio.create_task(run_term(), name=f"leader-term-{self.terms}")
        if not leads and term is not None:
            why = f"stopped leading: {self._why_not_leading()}"
            await self._end_term(term, why, logging.WARNING)
            return None
        return term

    def _why_not_leading(self) -> str:
        holder = self._holder_seen
        if holder and holder != self.identity:
            return f"the Lease is held by {holder}"
        deadline = self._election.timings.renew_deadline
        return f"the Lease was not renewed within renew_deadline ({deadline}s)"

    async def _end_term(self, term: asyncio.Task[None], why: str, level: int) -> None:
        term.cancel()
        results = await asyncio.gather(term, return_exceptions=True)
        LOG.log(level, "%s: the controller is stopped (%s)", why, self._where())
        error = results[0]
        if isinstance(error, Exception):
            LOG.error("the controller had failed: %r", error)

    async def _release(self) -> None:
        election = self._election
        patch = election.release()
        if patch is None:
            return
        try:
            async with asyncio.timeout(election.timings.renew_deadline):
                await self._leases.update_lease(
                    election.lease_namespace, election.lease_name, patch
                )
        except (LbaasError, TimeoutError) as exc:
            LOG.warning("%s not released (%r); it expires on its own", self._where(), exc)
            return
        LOG.info("released %s", self._where())
