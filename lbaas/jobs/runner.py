"""The job runner: owns a claim's bookkeeping from start to settled.

Converge code raises; the runner decides what that means, as kopf and netbox's JobRunner
do. The state machine, one branch per outcome:

* converge returned              → the claimed generation is done (fenced write)
* ``TemporaryError`` / unknown   → retry after backoff, unless attempts are used up,
  exception                        then as permanent
* ``PermanentError``             → ERROR on the load balancer, reason kept on the job
* ``SchemaMismatch``             → the same: a missing column stays missing until an
                                   operator runs ``lbaas db upgrade``
* fence says LOST / ``LeaseLost`` → someone else owns it now: write nothing, and no
                                   backoff or attempt is charged to the job

A job whose agent could not be reached is also handed to an ``AgentReturnWatch``, which
retries it as soon as that agent accepts connections again. Backoff doubles from ``backoff_base`` up to ``backoff_max``; a provider's own suggested
delay is honoured if longer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import Enum

from lbaas.config import WorkerSettings
from lbaas.converge.converge import Converger, ConvergeRequest
from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue
from lbaas.db.jobs.job_queue import Claim, Fence
from lbaas.db.session import Session
from lbaas.errors import AgentUnreachable, PermanentError, SchemaMismatch, TemporaryError
from lbaas.jobs.agent_return import AgentReturnWatch
from lbaas.metrics.process import ProcessMetrics
from lbaas.providers.base import LeaseLost

LOG = logging.getLogger(__name__)


class Outcome(Enum):
    DONE = "done"
    RETRY = "retry"
    FAILED = "failed"
    LEASE_LOST = "lease_lost"


def backoff_delay(attempts: int, base: float, maximum: float) -> float:
    """Delay before attempt number ``attempts + 1`` (attempts counts failures so far)."""
    return float(min(maximum, base * (2**attempts)))


class JobRunner:
    def __init__(
        self,
        database: Database,
        converger: Converger,
        settings: WorkerSettings,
        clock: Callable[[], float] = time.time,
        metrics: ProcessMetrics | None = None,
        agent_watch: AgentReturnWatch | None = None,
    ) -> None:
        self._agent_watch = agent_watch
        self._db = database
        self._converger = converger
        self._settings = settings
        self._clock = clock
        self._metrics = metrics

    def _settle_for(self, claim: Claim) -> Callable[..., Fence]:
        def settle(session: Session, error: str | None = None) -> Fence:
            fence = job_queue.check_fence(session, claim)
            if fence is not Fence.LOST:
                job_queue.settle_done(session, claim, self._clock(), error)
            return fence

        return settle

    def run(self, claim: Claim) -> Outcome:
        """Converge the claimed load balancer and settle the claim, whatever happens."""
        started = time.perf_counter()
        outcome = self._run(claim)
        if self._metrics is not None:
            self._metrics.observe_converge(outcome.value, time.perf_counter() - started)
        return outcome

    def _run(self, claim: Claim) -> Outcome:
        request = ConvergeRequest(claim.loadbalancer_id, rebuild=claim.rebuild, fence=claim)
        settle = self._settle_for(claim)
        try:
            self._converger.converge_load_balancer(request, settle)
            if claim.attempts:
                # The end of a retry streak: with the failures logged above, how long a
                # load balancer stayed PENDING and why.
                LOG.info(
                    "converge of %s done after %d failed attempt(s)",
                    claim.loadbalancer_id,
                    claim.attempts,
                )
            return Outcome.DONE
        except LeaseLost as exc:
            # Not the load balancer's failure: its new owner converges it now, with no
            # backoff and no attempt counted against it.
            LOG.info("%s", exc.operator_message)
            return Outcome.LEASE_LOST
        except PermanentError as exc:
            return self._fail(claim, request, exc.user_message, exc.operator_message)
        except SchemaMismatch as exc:
            return self._fail(claim, request, exc.operator_message, exc.operator_message)
        except TemporaryError as exc:
            outcome = self._retry(claim, request, exc.user_message, exc.operator_message, exc.delay)
            address = exc.address if isinstance(exc, AgentUnreachable) else None
            if outcome is Outcome.RETRY and address and self._agent_watch is not None:
                # Retried as soon as the agent answers, not only after the backoff.
                delay = max(self._settings.backoff_max, exc.delay)
                self._agent_watch.watch(address, (claim.loadbalancer_id, claim.attempts + 1), delay)
            return outcome
        except Exception as exc:  # noqa: BLE001 - top of the job loop: count as temporary
            LOG.exception("converge of %s raised", claim.loadbalancer_id)
            message = f"internal error: {type(exc).__name__}"
            return self._retry(claim, request, message, str(exc), 0.0)

    def _retry(
        self, claim: Claim, request: ConvergeRequest, user: str, operator: str, hint: float
    ) -> Outcome:
        if claim.attempts + 1 >= self._settings.max_attempts:
            reason = f"{user} (gave up after {claim.attempts + 1} attempts)"
            return self._fail(claim, request, reason, operator)
        delay = max(
            hint,
            backoff_delay(claim.attempts, self._settings.backoff_base, self._settings.backoff_max),
        )
        LOG.info(
            "converge of %s failed (attempt %d), retrying in %.2fs: %s",
            claim.loadbalancer_id,
            claim.attempts + 1,
            delay,
            operator,
        )
        job_queue.settle_retry(self._db, claim, self._clock(), delay, user)
        return Outcome.RETRY

    def _fail(self, claim: Claim, request: ConvergeRequest, user: str, operator: str) -> Outcome:
        LOG.warning("converge of %s failed for good: %s", claim.loadbalancer_id, operator)
        self._converger.give_up(request, user, self._settle_for(claim))
        return Outcome.FAILED
