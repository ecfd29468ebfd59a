"""From HAProxy's ``show stat`` to a ``HealthReport``, with counters that survive reloads.

Names are mapped back to lbaas ids with the renderer's own parse functions (``fe_<listener>``,
``be_<pool>``, ``srv_<member>``); rows lbaas did not name are ignored. States:

* listener: frontend ``OPEN`` is OPEN, unless its sessions reached ``slim`` (FULL); ``FULL``
  is FULL; anything else (``STOP``) is DOWN. Disabled frontends are absent from the stats;
  the controller knows them from the graph.
* pool: backend ``UP`` is UP, anything else DOWN.
* member: ``UP``/``UP 1/3`` UP, ``DOWN``/``DOWN 1/2`` DOWN, ``DRAIN``/``NOLB`` DRAIN,
  ``MAINT...`` MAINT, ``no check`` NO_CHECK.

Counters: HAProxy 2.6 counts per worker process, from zero, and a reload replaces the worker
with no way to hand its counters over. So ``WorkerLedger`` keeps the last cumulative counters
read from every worker pid and reports, per listener, their sum plus a carry for workers that
are gone. A pid leaves the ledger when the master's ``show proc`` stops listing it (its last
values move into the carry: same total, less to track) or when its counters go backwards (a
reused pid, i.e. a new process, as after the master was restarted).

Each collection asks the master for its workers and reads each with ``@!<pid> show stat``,
old workers still draining included, so what they count after a reload is seen. When the
master CLI does not answer (it re-executes itself during a reload) the current worker is
read through the runtime socket instead.

That alone still misses what an old worker counts after our last read of it: it accepts
connections until it learns it must stop, serves them, and exits, after which nothing can be
read. So the agent wraps each reload in ``across_reload``: just before it, a ``CliSession``
is opened to the worker about to be replaced, which cannot exit while the session is open.
After the reload the session is polled until that worker reports ``Stopping: 1`` (its
listeners are closed, so no connection can be added) and its tenant frontends have no
session left (so no byte can be added); that read is final, the session is closed and the
worker exits. The hold is bounded: ``HOLD_LIMIT`` seconds after the reload (longer, read
once a second after that, when the caller asks: the access logs hold the worker for the
lines in its ring, ``access_log.LAST_LINES_HOLD``), and HAProxy itself drops the session
after its idle limit should the agent stall. A worker still
draining at the limit keeps being read through the master until it exits, so at most the
bytes its long connections move in the last heartbeat interval are missed, never a
connection. The renderer also writes ``hard-stop-after`` (``providers.amphora_hard_stop_after``,
900 s unless the operator changes it; 0 leaves it out): a worker still draining when it fires
is stopped by HAProxy between two reads, which costs the same — what its connections moved
since the last heartbeat's read.

Active connections are a gauge: the sum over the live workers, never carried.

Pools (backends) and members (servers) are counted the same way, in the same ledger under
their own ids (UUIDs, distinct from every listener's): bytes, sessions, requests, failed
connections and responses, and failed health checks (a pool's summed over its servers).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from lbaas.amphora.ledger_store import ledger_document, load_ledger, save_ledger
from lbaas.host.runtime_api import CliSession, MasterCli, RuntimeApi, RuntimeApiError, Session
from lbaas.model.graph import ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from lbaas.render.haproxy.names import (
    parse_backend_name,
    parse_frontend_name,
    parse_server_name,
)

log = logging.getLogger(__name__)

StatRow = Mapping[str, str]
SessionOpener = Callable[[Path], Session]
#: Reads what else is wanted from a held worker (its runtime API, its pid): every
#: ``EXTRA_READ_EVERY`` seconds once it is held longer than ``HOLD_LIMIT``, and once more just
#: before it is let go (a worker stopped by ``hard-stop-after`` is lost between two reads).
ExtraRead = Callable[[RuntimeApi, int], None]

#: Seconds a replaced worker is held after its reload while its connections finish.
HOLD_LIMIT = 5.0
#: Seconds between two reads of a held worker.
HOLD_POLL = 0.05
#: Seconds between two reads of a worker held longer than ``HOLD_LIMIT`` (``across_reload``'s
#: ``limit``): its connections are long-lived, so a read a second is plenty.
HOLD_SLOW_POLL = 1.0
#: Seconds between two ``ExtraRead`` of a worker held longer than ``HOLD_LIMIT``.
EXTRA_READ_EVERY = 30.0


ZERO = ListenerCounters()


class WorkerLedger:
    """Per-listener totals over every worker seen: live ones by pid, gone ones carried."""

    def __init__(self) -> None:
        self._carried: dict[ListenerId, ListenerCounters] = {}
        self._last: dict[int, dict[ListenerId, ListenerCounters]] = {}

    @classmethod
    def resumed(
        cls,
        carried: Mapping[ListenerId, ListenerCounters],
        workers: Mapping[int, Mapping[ListenerId, ListenerCounters]],
    ) -> WorkerLedger:
        """A ledger that goes on from a stored one, rebased so its totals start at zero.

        Its workers keep their last values (so what they count next is counted once), and
        the carry is lowered by everything the stored ledger had reported.
        """
        ledger = cls()
        ledger._carried = dict(carried)
        ledger._last = {pid: dict(counters) for pid, counters in workers.items()}
        for lid, reported in ledger.totals().items():
            ledger._carried[lid] = ledger._carried.get(lid, ZERO) - reported
        return ledger

    def document(self, loadbalancer_id: str) -> str:
        """The ledger as stored by ``ledger_store``."""
        return ledger_document(loadbalancer_id, self._carried, self._last)

    @property
    def live_pids(self) -> set[int]:
        return set(self._last)

    def observe(self, pid: int, counters: Mapping[ListenerId, ListenerCounters]) -> None:
        """Record what worker ``pid`` has counted so far."""
        last = self._last.get(pid, {})
        if any(c.went_down_from(last[lid]) for lid, c in counters.items() if lid in last):
            self._retire(pid)  # the pid now belongs to another process
            last = {}
        self._last[pid] = {**last, **counters}

    def retire_absent(self, live: Collection[int]) -> None:
        """Carry the workers that are not in ``live`` (the master no longer has them)."""
        for pid in [p for p in self._last if p not in live]:
            self._retire(pid)

    def totals(self) -> dict[ListenerId, ListenerCounters]:
        sums = dict(self._carried)
        for counters in self._last.values():
            for lid, value in counters.items():
                sums[lid] = sums.get(lid, ZERO) + value
        return sums

    def _retire(self, pid: int) -> None:
        for lid, value in self._last.pop(pid, {}).items():
            self._carried[lid] = self._carried.get(lid, ZERO) + value


class StatsCollector:
    """Turns statistics of one amphora's HAProxy into cumulative health reports."""

    def __init__(
        self,
        loadbalancer_id: LoadBalancerId,
        open_session: SessionOpener = CliSession.open,
        *,
        store: Path | None = None,
    ) -> None:
        """With ``store``, the ledger is resumed from that file and kept in it."""
        self.loadbalancer_id = loadbalancer_id
        self._open_session = open_session
        self._store = store
        stored = None if store is None else load_ledger(store, loadbalancer_id)
        self._ledger = WorkerLedger() if stored is None else WorkerLedger.resumed(*stored)
        self._saved = ""
        # Reads and observations are serialised: a worker's counters must reach the ledger
        # in the order they were read, or an older read would look like a reused pid.
        self._lock = threading.Lock()

    def collect(self, api: RuntimeApi, master: MasterCli | None = None) -> HealthReport:
        """Read every worker through ``master``, or only the current one through ``api``."""
        with self._lock:
            if master is not None:
                try:
                    return self._collect_all(master)
                except RuntimeApiError as exc:
                    log.debug("master CLI unusable, reading the current worker only: %s", exc)
            for _ in range(3):
                pid = api.show_info()["Pid"]
                rows = api.show_stat()
                if api.show_info()["Pid"] == pid:
                    return self._report(_pid(pid), rows, {})
        raise RuntimeApiError("the haproxy worker kept changing while statistics were read")

    def report(
        self,
        worker_pid: int | str,
        rows: Sequence[StatRow],
        old_workers: Mapping[int, Sequence[StatRow]] | None = None,
    ) -> HealthReport:
        """The report for ``rows`` of the current worker and those of ``old_workers``."""
        with self._lock:
            return self._report(_pid(worker_pid), rows, old_workers or {})

    @contextmanager
    def across_reload(
        self,
        runtime_socket: Path,
        extra_read: ExtraRead | None = None,
        limit: float = HOLD_LIMIT,
    ) -> Iterator[None]:
        """Hold the worker serving ``runtime_socket`` through a reload, then count it out.

        ``extra_read``, if given, reads what else is wanted from the held worker (its
        access-log ring; see ``ExtraRead``); ``limit``: seconds after the reload the worker
        is let go even if still serving.
        """
        session: Session | None = None
        try:
            session = self._open_session(runtime_socket)
        except RuntimeApiError as exc:
            log.warning("cannot hold the worker through the reload: %s", exc)
        if session is None:
            yield
            return
        try:
            yield
        finally:
            # Also after a failed reload: the worker then never stops and the hold just ends.
            threading.Thread(
                target=self.drain,
                args=(session, limit, extra_read),
                name="stats-drain",
                daemon=True,
            ).start()

    def drain(
        self, session: Session, limit: float = HOLD_LIMIT, extra_read: ExtraRead | None = None
    ) -> None:
        """Read the held worker until it stopped with no tenant session, then let it go."""
        api = RuntimeApi(session)
        start = time.monotonic()
        deadline = start + limit
        extra_at = start + HOLD_LIMIT + EXTRA_READ_EVERY
        try:
            while True:
                with self._lock:
                    info = api.show_info()
                    rows = api.show_stat()
                    self._ledger.observe(_pid(info["Pid"]), _cumulative(rows))
                done = info.get("Stopping") == "1" and not _tenant_sessions(rows)
                if not done and time.monotonic() >= deadline:
                    log.info(
                        "worker %s still draining; released before its final read", info["Pid"]
                    )
                if done or time.monotonic() >= deadline:
                    if extra_read is not None:
                        extra_read(api, _pid(info["Pid"]))
                    return
                if extra_read is not None and time.monotonic() >= extra_at:
                    extra_read(api, _pid(info["Pid"]))
                    extra_at += EXTRA_READ_EVERY
                slow = time.monotonic() - start > HOLD_LIMIT
                time.sleep(HOLD_SLOW_POLL if slow else HOLD_POLL)
        except RuntimeApiError as exc:
            log.warning("lost the held worker before its final read: %s", exc)
        finally:
            session.close()

    def _collect_all(self, master: MasterCli) -> HealthReport:
        table = master.show_proc()
        if len(table.current_workers) != 1:
            raise RuntimeApiError(f"expected one current worker, found {table.workers}")
        current = table.current_workers[0].pid
        rows = master.worker_stat(current)
        old: dict[int, list[dict[str, str]]] = {}
        for worker in table.workers:
            if worker.pid != current:
                try:
                    old[worker.pid] = master.worker_stat(worker.pid)
                except RuntimeApiError:
                    pass  # exiting right now: its last read stays in the ledger
        self._ledger.retire_absent({w.pid for w in table.workers})
        return self._report(current, rows, old)

    def _report(
        self, pid: int, rows: Sequence[StatRow], old_workers: Mapping[int, Sequence[StatRow]]
    ) -> HealthReport:
        states: dict[ListenerId, ListenerState] = {}
        gauges: dict[ListenerId, int] = {}
        pool_states: dict[PoolId, PoolState] = {}
        members: dict[PoolId, dict[MemberId, MemberState]] = {}
        for row in rows:
            proxy, service = row.get("pxname", ""), row.get("svname", "")
            if service == "FRONTEND":
                listener_id = parse_frontend_name(proxy)
                if listener_id is not None:
                    states[listener_id] = listener_state(row)
                continue
            pool_id = parse_backend_name(proxy)
            if pool_id is None:
                continue
            if service == "BACKEND":
                up = row.get("status", "") == "UP"
                pool_states[pool_id] = PoolState.UP if up else PoolState.DOWN
                continue
            member_id = parse_server_name(service)
            if member_id is not None:
                members.setdefault(pool_id, {})[member_id] = member_state(row.get("status", ""))
        for worker_pid, worker_rows in [(pid, rows), *old_workers.items()]:
            self._ledger.observe(worker_pid, _cumulative(worker_rows))
            for lid, active in _sessions(worker_rows).items():
                gauges[lid] = gauges.get(lid, 0) + active
        totals = self._ledger.totals()

        def counted(object_id: str) -> ListenerCounters:
            key = ListenerId(object_id)
            return replace(totals.get(key, ZERO), active_connections=gauges.get(key, 0))

        listeners = {
            lid: ListenerHealth(state=states[lid], counters=counted(lid)) for lid in states
        }
        pools = {
            pid: PoolHealth(
                state=state,
                members=members.get(pid, {}),
                counters=counted(pid),
                member_counters={mid: counted(mid) for mid in members.get(pid, {})},
            )
            for pid, state in pool_states.items()
        }
        self._keep_ledger()
        return HealthReport(self.loadbalancer_id, listeners=listeners, pools=pools)

    def _keep_ledger(self) -> None:
        """Store the ledger as of this report, if it changed (see ``ledger_store``)."""
        if self._store is None:
            return
        document = self._ledger.document(self.loadbalancer_id)
        if document != self._saved:
            save_ledger(self._store, document)
            self._saved = document


def _tenant_frontends(rows: Sequence[StatRow]) -> Iterator[tuple[ListenerId, StatRow]]:
    for row in rows:
        if row.get("svname") == "FRONTEND":
            listener_id = parse_frontend_name(row.get("pxname", ""))
            if listener_id is not None:
                yield listener_id, row


def _servers(rows: Sequence[StatRow]) -> Iterator[tuple[PoolId, MemberId, StatRow]]:
    for row in rows:
        pool_id = parse_backend_name(row.get("pxname", ""))
        member_id = parse_server_name(row.get("svname", ""))
        if pool_id is not None and member_id is not None:
            yield pool_id, member_id, row


def _backends(rows: Sequence[StatRow]) -> Iterator[tuple[PoolId, StatRow]]:
    for row in rows:
        if row.get("svname") == "BACKEND":
            pool_id = parse_backend_name(row.get("pxname", ""))
            if pool_id is not None:
                yield pool_id, row


def _traffic(row: StatRow, check_failures: int) -> ListenerCounters:
    """A backend's or a server's counters: its errors are failed connections and responses."""
    return ListenerCounters(
        bytes_in=_int(row, "bin"),
        bytes_out=_int(row, "bout"),
        total_connections=_int(row, "stot"),
        request_errors=_int(row, "econ") + _int(row, "eresp"),
        requests=_int(row, "req_tot"),
        check_failures=check_failures,
    )


def _cumulative(rows: Sequence[StatRow]) -> dict[ListenerId, ListenerCounters]:
    """Per object id (listener, pool, member): what this worker counted since it started."""
    counted = {
        lid: ListenerCounters(
            bytes_in=_int(row, "bin"),
            bytes_out=_int(row, "bout"),
            total_connections=_int(row, "stot"),
            request_errors=_int(row, "ereq"),
            requests=_int(row, "req_tot"),
        )
        for lid, row in _tenant_frontends(rows)
    }
    checks: dict[PoolId, int] = {}
    for pool_id, member_id, row in _servers(rows):
        failed = _int(row, "chkfail")
        checks[pool_id] = checks.get(pool_id, 0) + failed
        counted[ListenerId(member_id)] = _traffic(row, failed)
    for pool_id, row in _backends(rows):
        counted[ListenerId(pool_id)] = _traffic(row, checks.get(pool_id, 0))
    return counted


def _tenant_sessions(rows: Sequence[StatRow]) -> dict[ListenerId, int]:
    """Open sessions per listener, only those with any (empty: nothing left to count)."""
    return {lid: n for lid, row in _tenant_frontends(rows) if (n := _int(row, "scur")) > 0}


def _sessions(rows: Sequence[StatRow]) -> dict[ListenerId, int]:
    """Open sessions per listener, pool and member of one worker."""
    found = _tenant_sessions(rows)
    for _pool, member_id, row in _servers(rows):
        found[ListenerId(member_id)] = _int(row, "scur")
    for pool_id, row in _backends(rows):
        found[ListenerId(pool_id)] = _int(row, "scur")
    return found


def _pid(text: int | str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise RuntimeApiError(f"not a worker pid: {text!r}") from exc


def listener_state(row: StatRow) -> ListenerState:
    status = row.get("status", "")
    if status == "FULL":
        return ListenerState.FULL
    if status != "OPEN":
        return ListenerState.DOWN
    limit = _int(row, "slim")
    return ListenerState.FULL if limit > 0 and _int(row, "scur") >= limit else ListenerState.OPEN


_MEMBER_STATES: tuple[tuple[Callable[[str], bool], MemberState], ...] = (
    (lambda s: s.startswith("UP"), MemberState.UP),
    (lambda s: s.startswith("DOWN"), MemberState.DOWN),
    (lambda s: s.startswith(("DRAIN", "NOLB")), MemberState.DRAIN),
    (lambda s: s.startswith("MAINT"), MemberState.MAINT),
    (lambda s: s.lower() == "no check", MemberState.NO_CHECK),
)


def member_state(status: str) -> MemberState:
    """The member state for a server's ``status`` column."""
    for matches, state in _MEMBER_STATES:
        if matches(status):
            return state
    return MemberState.DOWN


def _int(row: StatRow, key: str) -> int:
    try:
        return int(row.get(key) or 0)
    except ValueError:
        return 0
