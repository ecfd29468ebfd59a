"""The health manager's side of the agent fleet: host heartbeats, hosts down, stale amphorae.

* ``HostRegistry.record`` applies a host heartbeat: a host that is enrolled and whose
  (epoch, sequence) is newer than any accepted by any health manager (stored with the
  host, as amphora stamps are) is UP, with the address, zone, capacity and amphorae it
  announced. Unknown hosts are ignored: joining the fleet takes an enrolment.
* ``HostSweeper`` marks DOWN every host silent for ``host_stale_after`` — an idempotent
  UPDATE, so any number of health managers may run it — and then has the stale
  amphorae of UP hosts removed (``StaleAmphoraCleaner``): those a host says it runs but
  the controller does not place there (retired while the host was away, or moved to
  another host). That is how a host that comes back never serves a moved VIP again.
* Fencing a returning host: a host heartbeat that lists an amphora not live on that host
  (the old MASTER of a pair, failed over while its host was partitioned, still holds the
  VIP the survivor took) wakes the host sweeper at once (``SqlHostRegistry(on_stray=)``,
  ``HostSweeper(wake=)``), so the cleaner deletes it within the heartbeat that announced
  it instead of at the next sweep: the window in which both hold the VIP is the agent's
  heartbeat interval plus one DELETE, not that plus a sweep interval.

* Failing over a lost host's amphorae: in the iteration that marks hosts DOWN, the
  sweeper hands their ids to ``on_down`` (the stale-amphora sweeper's
  ``fail_over_hosts``), which requests the failover of every amphora on them at once,
  rather than when that sweeper's own round next comes and finds them silent. The same
  guards decide as for silence: the storm guard (more than the threshold's share of the
  hosts lost at once is our fault, not theirs), and the data-plane probe, since a host
  whose agent died while its HAProxies serve is agent-degraded, not lost.
* Telling a restarting agent from a lost host: before marking a silent host DOWN, the
  sweeper asks whether its kernel still answers on the agent's port
  (``lbaas.health.host_probe``, probed ahead like the amphorae). One that does is an agent
  restarting (an upgrade step) or wedged: it stays UP, listed in ``restarting``, for up to
  ``health.agent_restart_grace`` seconds more, and the amphora sweeper leaves its pairs'
  amphorae alone meanwhile (their VIP says nothing of either); its SINGLE amphorae are
  judged by their VIPs as ever. Past the grace, or once it stops answering, it is lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Protocol

from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.errors import ConvergeError
from lbaas.fleet.client_pool import AgentPool
from lbaas.health.host_probe import HostVerdicts
from lbaas.model.fleet import HostAddress, HostAnnouncement, SilentHost

log = logging.getLogger(__name__)


class HostRegistry(Protocol):
    def record(self, seen: HostAnnouncement, epoch: int, sequence: int, at: float) -> bool:
        """Apply a host heartbeat; False when the host is unknown or the stamp old."""
        ...

    def mark_silent_down(self, host_ids: Collection[str], heard_before: float) -> list[str]:
        """Mark DOWN those of ``host_ids`` still UP and last heard before ``heard_before``;
        their ids."""
        ...

    def silent_up(self, heard_before: float) -> list[SilentHost]:
        """The UP hosts last heard before ``heard_before`` (nothing is changed)."""
        ...

    def misplaced(self) -> list[tuple[HostAddress, list[str]]]:
        """Each UP host with the amphorae it runs that are not placed on it."""
        ...


class SqlHostRegistry:
    """``HostRegistry`` over the lbaas database; ``on_stray`` is called (after the commit)
    when an accepted heartbeat lists amphorae that are not live on its host."""

    def __init__(self, database: Database, on_stray: Callable[[], None] = lambda: None) -> None:
        self._db = database
        self._on_stray = on_stray

    def record(self, seen: HostAnnouncement, epoch: int, sequence: int, at: float) -> bool:
        with self._db.write() as session:
            strays = host_repo.record_heartbeat(session, seen, epoch, sequence, at)
        if strays:
            self._on_stray()
        return strays is not None

    def mark_silent_down(self, host_ids: Collection[str], heard_before: float) -> list[str]:
        with self._db.write() as session:
            return host_repo.mark_silent_down(session, host_ids, heard_before)

    def silent_up(self, heard_before: float) -> list[SilentHost]:
        with self._db.read() as session:
            return host_repo.silent_up_hosts(session, heard_before)

    def misplaced(self) -> list[tuple[HostAddress, list[str]]]:
        with self._db.read() as session:
            found = []
            for host, reported in host_repo.reported_by_up_hosts(session):
                stale = host_repo.misplaced_amphorae(session, host.host_id, reported)
                if stale:
                    found.append((host, stale))
            return found


def utc_datetime(at: float) -> datetime:
    """A time as the naive UTC datetime the database columns hold."""
    return datetime.fromtimestamp(at, UTC).replace(tzinfo=None)


class StaleAmphoraCleaner:
    """Removes from UP hosts the amphorae the controller placed elsewhere or retired."""

    def __init__(self, registry: HostRegistry, agents: AgentPool) -> None:
        self._registry = registry
        self._agents = agents
        self.removed: list[tuple[str, str]] = []
        """(host id, amphora id) of every removal, oldest first."""

    def clean(self) -> list[tuple[str, str]]:
        done = []
        for host, amphorae in self._registry.misplaced():
            client = self._agents.client(host)
            for amphora_id in amphorae:
                try:
                    client.delete_amphora(amphora_id)
                except ConvergeError as exc:  # the next sweep tries again
                    log.warning(
                        "stale amphora %s on host %s not removed yet: %s",
                        amphora_id,
                        host.host_id,
                        exc.operator_message,
                    )
                    continue
                log.warning(
                    "removed stale amphora %s from host %s (placed elsewhere or retired)",
                    amphora_id,
                    host.host_id,
                )
                done.append((host.host_id, amphora_id))
        self.removed.extend(done)
        return done


class HostSweeper:
    """Marks silent hosts DOWN (and has their amphorae failed over), then cleans the stale
    amphorae of live ones. With ``verdicts``, a silent host whose kernel still answers on
    its agent's port is taken for an agent restarting (``lbaas.health.host_probe``), not a
    lost host: it stays UP (``restarting``) for up to ``restart_grace`` more seconds."""

    def __init__(
        self,
        registry: HostRegistry,
        *,
        stale_after: float,
        cleaner: StaleAmphoraCleaner | None = None,
        clock: Callable[[], float] = time.time,
        wake: threading.Event | None = None,
        on_down: Callable[[list[str]], object] = lambda _hosts: None,
        probe_lead: float = 0.0,
        on_suspect: Callable[[list[str]], object] = lambda _hosts: None,
        verdicts: HostVerdicts | None = None,
        restart_grace: float = 0.0,
        settle: float = 0.0,
    ) -> None:
        """``on_down`` is given the hosts each sweep marks DOWN; ``on_suspect``, when
        ``probe_lead`` > 0, the UP hosts silent for ``stale_after - probe_lead`` (every
        sweep, an empty list included), so that their amphorae's data-plane probes (and
        the hosts' own, with ``verdicts``) are started ahead and have their verdicts when
        the host would be marked DOWN. ``settle``: how long a restarting host stays in
        ``restarting`` once heard again (its agent's first rounds may precede its
        amphorae's first heartbeats; the amphorae's own ``stale_after``)."""
        self._registry = registry
        self._on_down = on_down
        self._on_suspect = on_suspect
        self._probe_lead = min(max(probe_lead, 0.0), stale_after)
        # Set by the registry when a heartbeat announces a stray amphora: sweep now.
        self._wake = wake if wake is not None else threading.Event()
        self._stale_after = stale_after
        self._cleaner = cleaner
        self._clock = clock
        self._started = clock()
        self._cleaned_at: float | None = None
        self._verdicts = verdicts
        self._grace = max(restart_grace, 0.0) if verdicts is not None else 0.0
        self._restarting: frozenset[str] = frozenset()
        self._settle = settle
        self._returned: dict[str, float] = {}  # host heard again -> until when it settles
        self._suspects: list[str] = []  # the UP hosts silent for stale_after - probe_lead
        # Both sweepers' threads mark hosts DOWN (``mark_down``): one at a time.
        self._marking = threading.Lock()
        self.errors = 0

    @property
    def restarting(self) -> frozenset[str]:
        """The hosts silent past ``stale_after`` that still answer (as of the last sweep):
        agents restarting or wedged, left UP; their amphorae are judged one by one. A host
        heard again stays here for ``settle`` seconds."""
        now = self._clock()
        with self._marking:
            returned = frozenset(h for h, until in self._returned.items() if until > now)
            return self._restarting | returned

    def mark_down(self) -> list[str]:
        """Mark DOWN the hosts silent for ``stale_after`` (that do not answer, within the
        grace); their ids. The amphora sweeper calls it too, first in each of its sweeps
        (``StaleAmphoraSweeper(silent_hosts=)``), so that no failover is decided while its
        amphora's lost host still reads UP."""
        with self._marking:
            return self._mark_down(self._clock())

    def _mark_down(self, now: float) -> list[str]:
        # Silence before this sweeper started is not held against a host: a health
        # manager back from an outage of its own first listens for one whole period.
        listened = now - self._started
        if listened < self._stale_after - self._probe_lead:
            self._suspects = []
            return []
        # One read serves the suspects, the probes and the hosts to mark DOWN.
        silent = self._registry.silent_up(now - (self._stale_after - self._probe_lead))
        if self._verdicts is not None:
            self._verdicts.watch([s.host for s in silent])
        down: list[str] = []
        if listened >= self._stale_after:
            stale = [s for s in silent if s.last_heard < now - self._stale_after]
            answering = {s.host.host_id for s in stale if self._answers(s, now)}
            lost = [s.host.host_id for s in stale if s.host.host_id not in answering]
            if lost:
                down = self._registry.mark_silent_down(lost, now - self._stale_after)
            self._note_restarting(frozenset(answering), set(lost), now)
        self._suspects = [s.host.host_id for s in silent if s.host.host_id not in down]
        for host_id in down:
            log.warning("host %s silent for over %.1fs: marked DOWN", host_id, self._stale_after)
        return down

    def _answers(self, silent: SilentHost, now: float) -> bool:
        """Whether ``silent`` is left UP as a restarting agent: within the grace, and its
        kernel answered the newest probe."""
        if self._verdicts is None or now - silent.last_heard >= self._stale_after + self._grace:
            return False
        return self._verdicts.answers(silent.host)

    def _note_restarting(self, answering: frozenset[str], lost: set[str], now: float) -> None:
        for host_id in sorted(answering - self._restarting):
            log.warning(
                "host %s silent for over %.1fs but it answers on its agent's port: its agent "
                "is restarting (or wedged); not marked DOWN for up to %.0fs more, its "
                "amphorae judged one by one",
                host_id,
                self._stale_after,
                self._grace,
            )
        for host_id in sorted(self._restarting - answering - lost):
            log.info("host %s: its agent is back", host_id)
            self._returned[host_id] = now + self._settle
        for host_id in lost | answering:
            self._returned.pop(host_id, None)
        self._returned = {h: until for h, until in self._returned.items() if until > now}
        self._restarting = answering

    def sweep(self, *, woken: bool = True) -> list[str]:
        """One round; the ids of hosts marked DOWN by it. The cleaner runs when woken (a
        stray announced) and otherwise once per third of ``stale_after``: the sweep runs
        more often than that, for the hosts' sake, not the cleaner's."""
        now = self._clock()
        down = self.mark_down()
        if down:  # their amphorae's failovers, in this same iteration
            self._on_down(down)
        if self._probe_lead > 0:
            self._on_suspect(list(self._suspects))
        due = self._cleaned_at is None or now - self._cleaned_at >= self._stale_after / 3
        if self._cleaner is not None and (woken or due):
            self._cleaned_at = now
            self._cleaner.clean()
        return down

    def run(self, stop: threading.Event, interval: float) -> None:
        """Sweep every ``interval`` seconds, and at once when woken, until ``stop``."""
        while True:
            woken = self._wake.wait(interval)
            self._wake.clear()
            if stop.is_set():
                if self._verdicts is not None:
                    self._verdicts.close()
                return
            try:  # the top of the host sweep loop: log, count, sweep again later
                self.sweep(woken=woken)
            except Exception:
                self.errors += 1
                log.exception("host sweep failed")
