"""Failing over amphorae that stopped heartbeating, unless too many stopped at once.

One silent amphora is a failed amphora: replace it. Most of them silent at the same moment
is almost never most of the data plane dying; it is the health manager's own network, a
wrong heartbeat key after a rotation, or the database lagging. Failing them all over would
turn our fault into an outage of every load balancer, so above ``failover_threshold`` (a
share of all amphorae) the sweeper requests nothing, raises an alarm that operators can
see, and waits for heartbeats to return. This is Octavia's failover-storm guard, kept in
the health policy rather than in a repository query so it can be tested with a clock;
it judges silence per host first (``lbaas.health.storm``): one whole host lost is a host
loss to rebuild, however many of the amphorae it ran.

Two more guards against our own faults: a storm needs at least ``min_storm_size`` stale
amphorae (so a deployment of one amphora can still fail it over), and silence only counts
from the moment this sweeper started, so restarting the health manager after an outage of
its own does not make every amphora look stale at once.

Per load balancer, a ``LoadBalancerBreaker`` (if given) limits how often it is failed over
automatically within a window.

Requesting a failover is idempotent in the store (False while one is pending), so a stale
amphora seen again on the next sweep is not failed over twice.

Silence is the agent's, not necessarily the data plane's: before failing a silent amphora
over, the sweeper asks a ``DataPlaneProbe`` whether its load balancer's listeners still
answer on the VIP. If they do, the agent is taken to be degraded (paused, wedged,
restarting): the amphora is left alone, a warning is logged once, and it is reported in
``SweepResult.agent_silent`` and ``lbaas_amphorae_agent_silent`` until it heartbeats again. Only when the data plane is silent
too is the amphora rebuilt.

A pair shares its VIP, so the VIP says nothing of one of its amphorae: a silent pair
amphora is asked on its own VRRP address instead (an ``OwnAddressProbe``,
``lbaas.health.pair_probe``), unless its host was marked DOWN (lost: rebuilt at once, as
before) or is restarting (kept, as before). Without that probe, or an address, silence
alone fails a pair amphora over.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial

from lbaas.health.lb_breaker import LoadBalancerBreaker
from lbaas.health.pair_probe import OwnAddressProbe
from lbaas.health.probe import DataPlaneProbe, NoProbe
from lbaas.health.probe_ahead import Check, ProbesAhead
from lbaas.health.store import AmphoraHeartbeat, HealthStore
from lbaas.health.storm import storm_reason
from lbaas.model.enums import Topology
from lbaas.model.graph import AmphoraId, LoadBalancer

#: Data-plane probes run at once by one sweep (each a TCP connect of up to
#: ``health.probe_timeout``).
_MAX_PROBES_AT_ONCE = 32

log = logging.getLogger(__name__)

#: What vouched for an amphora left alone, by (its host restarting, a pair's amphora).
_EVIDENCE = {
    (True, True): "its host answers",
    (False, True): "its own address answers",
    (False, False): "its data plane answers",
}


@dataclass(frozen=True)
class SweepResult:
    """What one sweep found and did."""

    total: int
    stale: tuple[AmphoraId, ...]
    failovers_requested: tuple[AmphoraId, ...]
    alarm: str | None
    agent_silent: tuple[AmphoraId, ...] = ()
    """Stale amphorae whose data plane still answered: left alone."""


class StaleAmphoraSweeper:
    """Finds silent amphorae and requests their failover, with a storm guard."""

    def __init__(
        self,
        store: HealthStore,
        *,
        stale_after: float,
        failover_threshold: float,
        clock: Callable[[], float] = time.time,
        min_storm_size: int = 2,
        probe: DataPlaneProbe | None = None,
        breaker: LoadBalancerBreaker | None = None,
        silent_hosts: Callable[[], Collection[str]] = lambda: (),
        probe_lead: float = 0.0,
        restarting_hosts: Callable[[], Collection[str]] = lambda: (),
        pair_probe: OwnAddressProbe | None = None,
    ) -> None:
        """``silent_hosts`` marks the hosts silent too long DOWN and returns their ids
        (``HostSweeper.mark_down``); each sweep calls it first (see ``_sweep``).
        ``probe_lead``: how long before ``stale_after`` a silent amphora's data plane is
        probed (the probe's timeout; ``lbaas.health.probe_ahead``); 0 probes at
        ``stale_after``. ``restarting_hosts``: the silent hosts that still answer
        (``HostSweeper.restarting``): the pair amphorae on them are left alone.
        ``pair_probe``: asks a silent pair amphora of an UP host on its own address."""
        if stale_after <= 0:
            raise ValueError("stale_after must be positive")
        if not 0 <= failover_threshold <= 1:
            raise ValueError("failover_threshold is a share of all amphorae, from 0 to 1")
        self._store = store
        self._stale_after = stale_after
        self._threshold = failover_threshold
        self._clock = clock
        self._min_storm_size = min_storm_size
        self._probe = probe if probe is not None else NoProbe()
        self._probe_lead = min(max(probe_lead, 0.0), stale_after)
        self._pair_probe = pair_probe
        self._ahead = ProbesAhead(_MAX_PROBES_AT_ONCE)
        self._breaker = breaker
        self._silent_hosts = silent_hosts
        self._restarting_hosts = restarting_hosts
        self._agent_silent: set[AmphoraId] = set()
        # Amphorae of UP hosts silent long enough to be suspects (``suspect_hosts``), and
        # the lock that keeps their probes from being forgotten by a sweep's ``keep_only``.
        self._host_suspects: frozenset[AmphoraId] = frozenset()
        self._suspects_lock = threading.Lock()
        self._listening_since = clock()
        # The host sweeper's thread sweeps too (``fail_over_hosts``): one sweep at a time.
        self._sweeping = threading.Lock()
        self._alarm: str | None = None
        self.errors = 0
        """Sweeps that raised (counted by ``run``)."""
        self.failovers_requested = 0
        """Failovers this sweeper requested since it started (for ``/metrics``)."""

    @property
    def agent_silent(self) -> frozenset[AmphoraId]:
        """Amphorae whose agent is silent while their data plane answers (as of the last
        sweep): left alone, shown in ``/metrics`` so that the agent gets restarted."""
        return frozenset(self._agent_silent)

    @property
    def alarm(self) -> str | None:
        """Why automatic failover is stopped, or None while it is working."""
        return self._alarm

    def sweep(self) -> SweepResult:
        """Look at every amphora once; request failovers or raise the alarm."""
        return self.fail_over_hosts(())

    def fail_over_hosts(self, lost_hosts: Collection[str]) -> SweepResult:
        """A sweep in which every amphora on ``lost_hosts`` (just marked DOWN) counts as
        stale however recently it was heard: the host sweeper calls it in the iteration
        that marks them DOWN, so their failovers do not wait for this sweeper's own next
        round. The storm guard, the data-plane probe and the breaker apply as ever."""
        with self._sweeping:
            return self._sweep(frozenset(lost_hosts))

    def _sweep(self, lost_hosts: frozenset[str]) -> SweepResult:
        # Hosts first: an amphora found stale here whose host is silent too would
        # otherwise be failed over while the host still reads UP, and the failover's
        # call to that lost host waited out its connect timeout (issue 29). Marked now,
        # the host is DOWN before the failover is requested, and its amphorae count as
        # lost, whichever sweeper got there first.
        lost_hosts = lost_hosts | frozenset(self._silent_hosts())
        now = self._clock()
        # Silence before we were listening is not evidence against an amphora.
        cutoff = now - self._stale_after
        heard = self._store.list_amphora_heartbeats()
        stale = tuple(
            hb.amphora_id
            for hb in heard
            if max(hb.last_seen, self._listening_since) < cutoff or hb.host in lost_hosts
        )
        storm = storm_reason(
            heard, set(stale), threshold=self._threshold, min_storm_size=self._min_storm_size
        )
        if storm is not None:
            self._ahead.keep_only(())  # verdicts of before a storm are not kept for after
            self._raise_alarm(storm)
            return SweepResult(len(heard), stale, (), self._alarm)
        self._clear_alarm(len(stale), len(heard))
        self._probe_suspects(heard, frozenset(stale), now)
        silent = [hb for hb in heard if hb.amphora_id in stale]
        serving = self._data_plane_serving(silent, lost_hosts)
        requested = tuple(
            hb.amphora_id
            for hb in silent
            if hb.amphora_id not in serving
            and (self._breaker is None or self._breaker.allows(hb.loadbalancer_id))
            and self._store.request_failover(hb.amphora_id)
        )
        self.failovers_requested += len(requested)
        for amphora_id in requested:
            log.warning(
                "amphora %s and its data plane silent (or its host DOWN): failover requested",
                amphora_id,
            )
        return SweepResult(len(heard), stale, requested, None, tuple(sorted(serving)))

    def _data_plane_serving(
        self, stale: list[AmphoraHeartbeat], lost_hosts: frozenset[str]
    ) -> set[AmphoraId]:
        """The stale amphorae left alone: those whose load balancer still answers on its
        VIP, or (a pair's) whose own address answers, all probed at once (a lost host's
        VIPs each take the probe's whole timeout to say nothing, so one after another a
        host of twenty amphorae held its failovers back twenty timeouts, issue 34), and
        the pair amphorae of hosts that answer though their agents are silent
        (restarting)."""
        checks: dict[AmphoraId, Check] = {}
        restarting = frozenset(self._restarting_hosts()) if stale else frozenset()
        kept: set[AmphoraId] = set()
        pairs: set[AmphoraId] = set()
        for hb in stale:
            graph = self._store.load_graph(hb.loadbalancer_id)
            if graph is not None and graph.topology is Topology.ACTIVE_STANDBY:
                pairs.add(hb.amphora_id)
                if hb.host in restarting:
                    kept.add(hb.amphora_id)
                    continue
            check = self._check(hb, graph, lost_hosts)
            if check is not None:
                checks[hb.amphora_id] = check
        # Started ahead where the silence allowed (``_probe_suspects``), else now.
        verdicts = {aid: self._ahead.verdict(aid, check) for aid, check in checks.items()}
        serving = {amphora_id for amphora_id, v in verdicts.items() if v.result()} | kept
        for amphora_id in serving - self._agent_silent:
            log.warning(
                "agent of amphora %s silent for more than %.1fs but %s: "
                "agent degraded, amphora not failed over",
                amphora_id,
                self._stale_after,
                _EVIDENCE[(amphora_id in kept, amphora_id in pairs)],
            )
        for amphora_id in self._agent_silent - serving:
            log.info("amphora %s: agent degraded no longer", amphora_id)
        self._agent_silent = serving
        return serving

    def _probe_suspects(
        self, heard: list[AmphoraHeartbeat], stale: frozenset[AmphoraId], now: float
    ) -> None:
        """Start the probes of the amphorae silent long enough that theirs would be due
        within the probe's timeout (``lbaas.health.probe_ahead``)."""
        if self._probe_lead <= 0:
            return
        cutoff = now - (self._stale_after - self._probe_lead)
        suspects = {
            hb.amphora_id: hb
            for hb in heard
            if hb.amphora_id not in stale and max(hb.last_seen, self._listening_since) < cutoff
        }
        with self._suspects_lock:
            self._ahead.keep_only(stale | set(suspects) | self._host_suspects)
            self._start_ahead(suspects)

    def suspect_hosts(self, hosts: Collection[str]) -> None:
        """Start the data-plane probes of every amphora on ``hosts``: UP hosts silent for
        nearly ``host_stale_after`` (``HostSweeper(on_suspect=)``, every host sweep). A
        lost host's amphorae may have been heard later than the host itself, so their own
        silence would start no probe ahead; without this, their failovers waited a whole
        probe timeout after the host was marked DOWN (issue 29)."""
        if not hosts and not self._host_suspects:
            return
        wanted = frozenset(hosts)
        heard = self._store.list_amphora_heartbeats() if wanted else []
        suspects = {hb.amphora_id: hb for hb in heard if hb.host in wanted}
        with self._suspects_lock:
            self._host_suspects = frozenset(suspects)
            self._start_ahead(suspects)

    def _start_ahead(self, suspects: dict[AmphoraId, AmphoraHeartbeat]) -> None:
        for amphora_id in set(suspects) - self._ahead.started():
            hb = suspects[amphora_id]
            check = self._check(hb, self._store.load_graph(hb.loadbalancer_id), frozenset())
            if check is not None:
                self._ahead.start(amphora_id, check)

    def _check(
        self, hb: AmphoraHeartbeat, graph: LoadBalancer | None, lost_hosts: frozenset[str]
    ) -> Check | None:
        """The probe that may vouch for a silent amphora, or None if nothing can."""
        if graph is None:
            return None
        if graph.topology is not Topology.ACTIVE_STANDBY:
            return partial(self._probe.serving, graph)
        # A pair shares its VIP: the survivor answering says nothing of this amphora (a
        # lost MASTER's host would never get its BACKUP rebuilt); only its own address
        # can, unless its host is lost already (its kernel did not answer).
        if self._pair_probe is None or hb.address is None or hb.host in lost_hosts:
            return None
        return partial(self._pair_probe.answers, hb.address)

    def run(self, stop: threading.Event, interval: float) -> None:
        """Sweep every ``interval`` seconds until ``stop`` is set."""
        while not stop.wait(interval):
            try:
                self.sweep()
            except Exception:  # the top of the sweep loop: log, count, sweep again later
                self.errors += 1
                log.exception("stale-amphora sweep failed")
        self._ahead.close()

    def _raise_alarm(self, reason: str) -> None:
        if self._alarm is None:
            log.error("%s", reason)
        self._alarm = reason

    def _clear_alarm(self, stale: int, total: int) -> None:
        if self._alarm is not None:
            log.warning(
                "failover storm over: %d of %d amphorae stale; automatic failover resumed",
                stale,
                total,
            )
        self._alarm = None
