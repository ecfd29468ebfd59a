"""Leader election over a ``coordination.k8s.io/v1`` Lease, the way client-go's
``leaderelection`` does it: this module is the pure state machine (what to write next and
whether this replica leads), its clocks given so that it is tested with a fake clock and
no sleeps; ``leader`` runs it against the API and starts and stops the controller.

The rules:

- **Acquire.** No Lease: create one naming this replica (``holderIdentity``); a 409 means
  another replica created it first. A Lease held by another is taken over only once it
  has expired, or at once when its ``holderIdentity`` is empty (released). Expired means
  ``leaseDurationSeconds`` have passed since this replica saw the Lease last change (its
  holder, ``renewTime`` or ``resourceVersion``), on this replica's monotonic clock. That is
  "``renewTime + leaseDurationSeconds`` has passed" measured as client-go measures it,
  without comparing two hosts' wall clocks; the cost is that a replica which starts while
  a dead leader's Lease is still there waits one whole duration. A takeover sets
  ``acquireTime`` and increments ``leaseTransitions``.
- **Optimistic concurrency.** Every write of an existing Lease carries the
  ``resourceVersion`` read just before; a 409 means another replica wrote first, and the
  attempt is lost (the next one reads again).
- **Renew.** The leader writes ``renewTime`` every ``retry_period``. It leads until
  ``renew_deadline`` has passed since the *start* of its last successful write (the server
  may have applied it at any moment of the request). A follower's countdown starts no
  earlier than the server applied that write, and ``renew_deadline < lease_duration``, so
  a leader that cannot renew stops acting before anyone may take over; the difference is
  the margin for a slow scheduler. Seeing the Lease held by another also stops it.
- **Release.** On a clean stop, after the controller has stopped: ``holderIdentity``
  empty, ``leaseDurationSeconds`` 1 and ``renewTime`` now, with the ``resourceVersion``
  precondition (a Lease someone else holds already is left alone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from lbaas.integrations.kubernetes.base import Json

LEASE_API_VERSION = "coordination.k8s.io/v1"


@dataclass(frozen=True)
class ElectionTimings:
    lease_duration: int
    """Seconds (the Lease's ``leaseDurationSeconds`` is a whole number)."""
    renew_deadline: float
    retry_period: float


@dataclass(frozen=True)
class LeaseRecord:
    """What a Lease says, read from its JSON."""

    holder: str
    lease_duration: int
    transitions: int
    acquire_time: str | None
    renew_time: str | None
    resource_version: str | None

    @classmethod
    def from_lease(cls, lease: Json) -> LeaseRecord:
        spec = lease.get("spec") or {}
        metadata = lease.get("metadata") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration=int(spec.get("leaseDurationSeconds") or 0),
            transitions=int(spec.get("leaseTransitions") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            resource_version=metadata.get("resourceVersion"),
        )

    def change_mark(self) -> tuple[str, str | None, str | None]:
        """What changes whenever anyone writes the Lease."""
        return (self.holder, self.renew_time, self.resource_version)


class Action(StrEnum):
    CREATE = "create"
    TAKE_OVER = "take over"
    RENEW = "renew"
    WAIT = "wait"


@dataclass(frozen=True)
class Attempt:
    action: Action
    body: Json
    """The Lease to create, or the merge patch to send (empty for WAIT)."""
    started: float
    """The monotonic time the attempt began (before the Lease was read)."""
    holder: str
    """Who held the Lease as read ("" when there was none, or it was released)."""


def micro_time(moment: datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339 in UTC with microseconds)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Election:
    """One replica's view of the election. ``clock`` is monotonic seconds; ``wall`` gives
    the times written into the Lease (for people and other tools to read)."""

    def __init__(
        self,
        identity: str,
        lease_namespace: str,
        lease_name: str,
        timings: ElectionTimings,
        clock: Callable[[], float],
        wall: Callable[[], datetime],
    ) -> None:
        self.identity = identity
        self.lease_namespace = lease_namespace
        self.lease_name = lease_name
        self.timings = timings
        self._clock = clock
        self._wall = wall
        self._leading = False
        self._renewed_at = 0.0
        self._seen: LeaseRecord | None = None
        self._seen_mark: tuple[str, str | None, str | None] | None = None
        self._seen_at = 0.0

    def begin(self, lease: Json | None) -> Attempt:
        """What to write, given the Lease just read (None: there is none)."""
        now = self._clock()
        if lease is None:
            return Attempt(Action.CREATE, self._new_lease(), now, "")
        record = LeaseRecord.from_lease(lease)
        self._observe(record, now)
        if record.holder == self.identity:
            return Attempt(Action.RENEW, self._renewal(record), now, record.holder)
        self._leading = False  # another holds it: whatever this replica thought, it lost
        if not record.holder or now >= self._seen_at + record.lease_duration:
            return Attempt(Action.TAKE_OVER, self._takeover(record), now, record.holder)
        return Attempt(Action.WAIT, {}, now, record.holder)

    def succeeded(self, attempt: Attempt, written: Json) -> None:
        """The write of ``attempt`` was accepted: this replica holds the Lease."""
        self._leading = True
        self._renewed_at = attempt.started
        self._observe(LeaseRecord.from_lease(written), attempt.started)

    def leads(self) -> bool:
        """Whether this replica may act now; False once the renew deadline has passed."""
        if self._leading and self.time_left() <= 0:
            self._leading = False
        return self._leading

    def time_left(self) -> float:
        """Seconds until the renew deadline (0 when not leading)."""
        if not self._leading:
            return 0.0
        return max(0.0, self._renewed_at + self.timings.renew_deadline - self._clock())

    def release(self) -> Json | None:
        """The patch that gives the Lease up, if this replica leads."""
        seen = self._seen
        if not self.leads() or seen is None or seen.holder != self.identity:
            return None  # past its deadline, another may hold it already: let it expire
        self._leading = False
        return self._patch(
            seen,
            {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": self._now()},
        )

    def _observe(self, record: LeaseRecord, now: float) -> None:
        self._seen = record
        if record.change_mark() != self._seen_mark:
            self._seen_mark = record.change_mark()
            self._seen_at = now

    def _now(self) -> str:
        return micro_time(self._wall())

    def _new_lease(self) -> Json:
        now = self._now()
        return {
            "apiVersion": LEASE_API_VERSION,
            "kind": "Lease",
            "metadata": {"name": self.lease_name, "namespace": self.lease_namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.timings.lease_duration,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }

    def _renewal(self, record: LeaseRecord) -> Json:
        spec = {"renewTime": self._now(), "leaseDurationSeconds": self.timings.lease_duration}
        return self._patch(record, spec)

    def _takeover(self, record: LeaseRecord) -> Json:
        now = self._now()
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.timings.lease_duration,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": record.transitions + 1,
        }
        return self._patch(record, spec)

    def _patch(self, record: LeaseRecord, spec: Json) -> Json:
        patch: Json = {"spec": spec}
        if record.resource_version is not None:
            patch["metadata"] = {"resourceVersion": record.resource_version}
        return patch
