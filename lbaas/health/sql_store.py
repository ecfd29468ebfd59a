"""The health store on lbaas's database (``HealthStore`` over ``lbaas.db``).

A heartbeat is applied as a change against what this process already knows
(``known_state``): which load balancer the amphora serves, the load balancer's graph and
the statuses last written for it. In the steady state a heartbeat touches no database at
all; what it changed waits in ``PendingWrites`` and ``flush`` (run every flush interval by
the ``Flusher`` thread) writes it in two transactions:

1. liveness: the amphorae's assignments are read back (so a deleted or moved amphora is
   forgotten within one interval), every ``last_heartbeat_at`` moves forward in one
   ``UPDATE`` (to the batch's earliest time: it may lag by one interval, never run ahead),
   and the versions of the load balancers heard from are read to
   drop the graphs that changed;
2. counters: every counter record of the amphorae heard from is read ``FOR UPDATE`` in one
   statement, the interval's reports are folded into them in arrival order, and the
   records that changed are upserted in one executemany.

Every agent sends each heartbeat to every health manager, so several of them flush the
same amphorae at about the same time. So the flush first reads the amphorae's stored
stamps without a lock: an amphora whose every fact here is no newer (another manager
already wrote this very datagram) is done with, its row not even taken. The others' rows
are locked with ``SKIP LOCKED``: a row another transaction holds (most often another
manager writing the same datagram) is not waited for, and nothing of that amphora is
written; what this process heard from it is carried over to the next flush
(``PendingWrites.carry_over``), where the stored stamp decides as for any heartbeat. An
amphora found held ``SKIPS_BEFORE_WAITING`` flushes in a row is waited for at the next,
so a long transaction elsewhere delays its facts but cannot make them pile up in memory.

Statuses are not batched: when the roll-up differs from what was written, only the
objects whose status differs are written, at once, in a transaction that holds the load
balancer's row lock and checks that it is settled and still at the generation the graph
was read at; so a status computed from an old graph, or during a converge, is never
written. See docs/operations.md ("Health and failover") for what a crash may lose.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from lbaas.db.engine import Database
from lbaas.db.health import health_repo
from lbaas.db.health.health_repo import Stamp
from lbaas.db.loadbalancers import status_writer
from lbaas.db.loadbalancers.graph_loader import load_graph
from lbaas.db.session import Connection, Session
from lbaas.health.counters import CounterRecord
from lbaas.health.freshness import HeartbeatStamp, newer, not_older
from lbaas.health.known_state import KnownLoadBalancer, KnownState, Version
from lbaas.health.pending_writes import PendingBatch, PendingWrites, StampedUpdate
from lbaas.health.rollup import OperatingStatuses
from lbaas.health.store import AmphoraHeartbeat, CounterUpdate, HealthStore
from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancer, LoadBalancerId
from lbaas.model.health import ListenerCounters

log = logging.getLogger(__name__)

SKIPS_BEFORE_WAITING = 4
"""Flushes in a row an amphora's row may be found held before the next flush waits for it."""


_COUNTER_FIELDS = tuple(f.name for f in fields(ListenerCounters))
_COUNTER_NAMES = frozenset(_COUNTER_FIELDS)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _counters(raw: Mapping[str, int]) -> ListenerCounters:
    if raw.keys() <= _COUNTER_NAMES:  # as this store writes them: no copy
        return ListenerCounters(**raw)
    return ListenerCounters(**{k: int(v) for k, v in raw.items() if k in _COUNTER_NAMES})


def _as_row(counters: ListenerCounters) -> dict[str, int]:
    """``asdict`` without its deep copy (it was most of a flush's time)."""
    return {name: getattr(counters, name) for name in _COUNTER_FIELDS}


def _changed(
    statuses: OperatingStatuses, written: OperatingStatuses | None
) -> dict[str, Mapping[str, OperatingStatus]]:
    """The statuses per kind that differ from ``written`` (all of them without it)."""
    if statuses is written:  # the processor reuses an unchanged roll-up
        return {}
    by_kind = statuses.by_kind()
    if written is None:
        return by_kind
    return {
        kind: changed
        for kind, section in by_kind.items()
        if (changed := {i: s for i, s in section.items() if written.get(i) != s})
    }


class SqlHealthStore(HealthStore):
    def __init__(
        self,
        database: Database,
        notify: Callable[[], None] = lambda: None,
        *,
        known: KnownState | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = database
        # Wakes the workers once a failover job is committed (they would poll it anyway).
        self._notify = notify
        self._known = known if known is not None else KnownState()
        self._clock = clock
        self._pending = PendingWrites()
        self._flushing = threading.Lock()  # flushes run one at a time, in order

    def record_heartbeat(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        received_at: float,
        stamp: HeartbeatStamp | None = None,
    ) -> bool:
        lookup = self._known.amphora(amphora_id, self._clock())
        serves = lookup.loadbalancer_id
        if not lookup.cached:
            with self._db.read_connection() as conn:
                found = health_repo.amphora_assignments(conn, [amphora_id])
            assignments = {AmphoraId(a): LoadBalancerId(lb) for a, lb in found.items()}
            self._known.remember_amphorae([amphora_id], assignments, self._clock())
            serves = assignments.get(amphora_id)
        if serves != loadbalancer_id:
            return False
        self._pending.hear(amphora_id, loadbalancer_id, received_at, stamp)
        return True

    def load_graph(self, loadbalancer_id: LoadBalancerId) -> LoadBalancer | None:
        return None if (known := self._load(loadbalancer_id)) is None else known.graph

    def _load(self, loadbalancer_id: LoadBalancerId) -> KnownLoadBalancer | None:
        known = self._known.loadbalancer(loadbalancer_id)
        if known is not None:
            return known
        with self._db.read_connection() as conn:
            # The version first: a change landing in between makes it look older than the
            # graph, which costs a reload, never a write from a stale graph.
            version = health_repo.loadbalancer_versions(conn, [loadbalancer_id])
            graph = load_graph(conn, loadbalancer_id) if version else None
        if graph is None:
            return None
        return self._known.remember_graph(graph, version[loadbalancer_id])

    def refresh_graphs(self, loadbalancer_ids: list[LoadBalancerId]) -> None:
        """One query for their versions; the graphs that moved are read again when asked."""
        with self._db.read_connection() as conn:
            versions = health_repo.loadbalancer_versions(conn, loadbalancer_ids)
        self._known.revalidate(
            loadbalancer_ids, {LoadBalancerId(lb): v for lb, v in versions.items()}
        )

    def update_listener_counters(
        self,
        amphora_id: AmphoraId,
        loadbalancer_id: LoadBalancerId,
        update: CounterUpdate,
        stamp: HeartbeatStamp | None = None,
    ) -> None:
        self._pending.add_counter_update(StampedUpdate(amphora_id, loadbalancer_id, stamp, update))

    def apply_operating_statuses(
        self,
        loadbalancer_id: LoadBalancerId,
        statuses: OperatingStatuses,
        heard_from: tuple[AmphoraId, HeartbeatStamp] | None = None,
    ) -> bool:
        known = self._known.loadbalancer(loadbalancer_id)
        if known is not None and known.converging:
            return False  # dropped by the next flush once the converge has settled
        now = self._clock()
        written = self._known.written(known, now) if known is not None else None
        changes = _changed(statuses, written)
        if not changes:
            return True
        with self._db.write() as session:
            if known is None:
                settled = health_repo.loadbalancer_is_settled(session, loadbalancer_id)
            else:
                generation = known.version[1]
                settled = health_repo.loadbalancer_is_settled_at(
                    session, loadbalancer_id, generation
                )
            if settled and not _fresh(session, heard_from):
                return False  # a replayed or overtaken heartbeat: another one is newer
            if settled:
                status_writer.apply_operating_statuses(session, changes, _now())
        if not settled:
            self._known.forget(loadbalancer_id)
            return False
        if known is not None:
            self._known.remember_written(known, statuses, now)
        return True

    def flush(self) -> None:
        with self._flushing:
            batch = self._pending.take()
            if not batch:
                return
            try:
                assignments, held, versions = self._write_batch(batch)
            except Exception:
                # Only liveness is put back: a second attempt after a commit whose outcome
                # was lost would count unstamped counters twice (docs/operations.md).
                self._pending.restore_liveness(batch)
                raise
            self._pending.carry_over(batch, held)
        self._known.remember_amphorae(batch.heard.keys(), assignments, self._clock())
        self._known.revalidate(batch.loadbalancers, versions)

    def _write_batch(
        self, batch: PendingBatch
    ) -> tuple[dict[AmphoraId, LoadBalancerId], set[AmphoraId], dict[LoadBalancerId, Version]]:
        """One transaction: freshness, counters, liveness. Returns the assignments read, the
        live amphorae whose rows another transaction held (nothing of theirs was written)
        and the versions read."""
        with self._db.write_connection() as conn:
            # The amphora rows first, locked: they hold the newest accepted stamps, and two
            # health managers flushing the same amphora must not both take one as fresh.
            locked, live, held = _lock_amphorae(conn, batch)
            accepted = {a: HeartbeatStamp.stored(stamp) for a, (_, stamp) in locked.items()}
            fresh = [  # of the rows locked, and of amphorae gone (no stamp to compare)
                u
                for u in batch.counter_updates
                if (u.amphora_id in locked or u.amphora_id not in live)
                and newer(u.stamp, accepted.get(u.amphora_id))
            ]
            if fresh:
                self._write_counters(conn, fresh)
            heard = {
                a: at
                for a, (lb, at) in batch.heard.items()
                if a in locked and locked[a][0] == lb and newer(batch.newest.get(a), accepted[a])
            }
            for pairs, at in _liveness_groups(batch, heard):
                health_repo.record_heartbeats(conn, pairs, at)
            health_repo.record_stamps(
                conn, {a: batch.newest[a].as_row() for a in heard if a in batch.newest}
            )
            versions = health_repo.loadbalancer_versions(conn, batch.loadbalancers)
        return live, held, {LoadBalancerId(lb): v for lb, v in versions.items()}

    def _write_counters(self, conn: Connection, updates: list[StampedUpdate]) -> None:
        stored: dict[AmphoraId, dict[ListenerId, CounterRecord]] = defaultdict(dict)
        for row in health_repo.lock_counters_of(conn, {u.amphora_id for u in updates}):
            stored[AmphoraId(row.amphora_id)][ListenerId(row.listener_id)] = CounterRecord(
                epoch=row.epoch, base=_counters(row.base), last=_counters(row.last)
            )
        health_repo.put_counter_rows(conn, _folded_rows(updates, stored))

    def list_amphora_heartbeats(self) -> list[AmphoraHeartbeat]:
        # What this process heard but has not flushed yet counts too.
        pending = self._pending.last_heard()
        with self._db.read() as session:
            rows = health_repo.heartbeating_amphorae(session)
        heard = []
        for amphora_id, lb, seen, host, address in rows:
            amp = AmphoraId(amphora_id)
            latest = max(seen, pending.get(amp, seen))
            heard.append(AmphoraHeartbeat(amp, LoadBalancerId(lb), latest, host, address))
        return heard

    def request_failover(self, amphora_id: AmphoraId) -> bool:
        with self._db.write() as session:
            requested = health_repo.request_failover(session, amphora_id, _now())
        if requested:
            self._notify()
        return requested


def _lock_amphorae(
    conn: Connection, batch: PendingBatch
) -> tuple[dict[str, tuple[str, Stamp | None]], dict[AmphoraId, LoadBalancerId], set[AmphoraId]]:
    """The rows to write locked: (the locked rows, every live amphora's load balancer,
    the live amphorae with newer facts whose rows another transaction holds).

    A plain read first: an amphora whose every fact is no newer than its stored stamp
    (another health manager wrote this very datagram) is done with, its row not taken.
    Of the rest, only those held too long are waited for, first and in id order (as every
    health manager locks them), so two flushes never wait on each other in a cycle.
    """
    live = health_repo.amphora_stamps(conn, batch.amphorae)
    newest = _newest_facts(batch)
    to_lock = {
        AmphoraId(a)
        for a, (_, stored) in live.items()
        if newer(newest.get(AmphoraId(a)), HeartbeatStamp.stored(stored))
    }
    overdue = {a for a, times in batch.skipped.items() if times >= SKIPS_BEFORE_WAITING}
    locked = health_repo.amphora_stamps(conn, overdue & to_lock, "wait")
    locked |= health_repo.amphora_stamps(conn, to_lock - overdue - locked.keys(), "skip")
    assignments = {AmphoraId(a): LoadBalancerId(lb) for a, (lb, _) in live.items()}
    return locked, assignments, {a for a in to_lock if a not in locked}


def _newest_facts(batch: PendingBatch) -> dict[AmphoraId, HeartbeatStamp | None]:
    """Per amphora, the newest stamp of what the batch holds for it (None: a fact without
    a stamp, which is never checked)."""
    newest: dict[AmphoraId, HeartbeatStamp | None] = {}
    facts = [(a, batch.newest.get(a)) for a in batch.heard]
    facts += [(u.amphora_id, u.stamp) for u in batch.counter_updates]
    for amphora_id, stamp in facts:
        if amphora_id not in newest:
            newest[amphora_id] = stamp
        elif (known := newest[amphora_id]) is not None and (stamp is None or known < stamp):
            newest[amphora_id] = stamp
    return newest


def _liveness_groups(
    batch: PendingBatch, heard: Mapping[AmphoraId, float]
) -> list[tuple[list[tuple[str, str]], float]]:
    """The (amphora, load balancer) pairs to record, each group at its earliest time: this
    interval's, and those carried over from an earlier one (which must not hold the
    others back by a whole interval)."""
    groups: dict[bool, list[AmphoraId]] = {False: [], True: []}
    for amphora_id in heard:
        groups[amphora_id in batch.carried].append(amphora_id)
    return [
        ([(a, batch.heard[a][0]) for a in group], min(heard[a] for a in group))
        for group in groups.values()
        if group
    ]


def _fresh(session: Session, heard_from: tuple[AmphoraId, HeartbeatStamp] | None) -> bool:
    """Whether statuses from ``heard_from`` may be written (see ``lbaas.health.freshness``)."""
    if heard_from is None:
        return True
    amphora_id, stamp = heard_from
    accepted = HeartbeatStamp.stored(health_repo.accepted_stamp(session, amphora_id))
    return not_older(stamp, accepted)


def _folded_rows(
    updates: list[StampedUpdate], stored: dict[AmphoraId, dict[ListenerId, CounterRecord]]
) -> list[dict[str, Any]]:
    """Apply the interval's updates in arrival order; the rows of the records that moved."""
    before = {(a, lid): r for a, records in stored.items() for lid, r in records.items()}
    owner: dict[tuple[AmphoraId, ListenerId], LoadBalancerId] = {}
    for pending in updates:
        records = stored[pending.amphora_id]
        for listener_id, record in pending.update(records).items():
            records[listener_id] = record
            owner[(pending.amphora_id, listener_id)] = pending.loadbalancer_id
    return [
        {
            "amphora_id": amphora_id,
            "listener_id": listener_id,
            "loadbalancer_id": lb_id,
            "epoch": record.epoch,
            "base": _as_row(record.base),
            "last": _as_row(record.last),
        }
        for (amphora_id, listener_id), lb_id in sorted(owner.items())
        if (record := stored[amphora_id][listener_id]) != before.get((amphora_id, listener_id))
    ]
