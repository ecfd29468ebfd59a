"""A lost host: its amphorae's failovers are requested in the sweep that marks it DOWN, and
the worker sends that host no call until it is back, when its leftovers are removed. Nor
does it when the amphora sweeper got there first (it marks silent hosts DOWN before it
decides), or when the host still reads UP but has missed two heartbeats.

The pieces are the real ones (``HostSweeper``, ``StaleAmphoraSweeper``, ``AmphoraProvider``,
``StaleAmphoraCleaner``) over in-memory stores; every agent is a ``RecordingAgent`` passed
in, so a call to the lost host's agent would show in its record.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from lbaas.config import load_settings
from lbaas.db.jobs.job_queue import Claim
from lbaas.fleet.client_pool import AgentPool
from lbaas.health.fleet import HostSweeper, StaleAmphoraCleaner
from lbaas.health.host_probe import HostProbe, HostVerdicts
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.probe import DataPlaneProbe
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.model.enums import AmphoraStatus, HostStatus, Topology
from lbaas.model.fleet import HostAddress, HostAnnouncement, SilentHost
from lbaas.model.graph import AmphoraId, LoadBalancerId
from lbaas.providers.amphora.driver import AmphoraProvider
from lbaas.providers.base import ProviderContext
from tests.support.clock import FakeClock
from tests.support.graphs import listener, load_balancer
from tests.support.waiting import wait_until
from tests.unit.providers.amphora_fakes import GONE, MemoryAmphoraStore, RecordingAgent

T0 = 10_000.0
HOSTS = [HostAddress(f"h{i}", "127.0.0.1", 9440 + i) for i in range(1, 4)]


class Hosts:
    """A ``HostRegistry`` over the provider's memory store: DOWN/UP is the store's fleet
    status, and a host's report is what its agent was last given and not told to delete."""

    def __init__(self, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]) -> None:
        self.store, self.agents = store, agents
        # The provider reads the same record of when each host was last heard.
        self.heard = store.heard_at
        self.heard.update({h.host_id: T0 for h in HOSTS})

    def record(self, seen: HostAnnouncement, epoch: int, sequence: int, at: float) -> bool:
        self.heard[seen.host_id] = at
        self._set(seen.host_id, HostStatus.UP)
        return True

    def _set(self, host_id: str, status: HostStatus) -> None:
        where = next(h for h in self.store.fleet if h.host_id == host_id)
        zone, capacity, _ = self.store.fleet[where]
        self.store.fleet[where] = (zone, capacity, status)

    def mark_silent_down(self, host_ids: Collection[str], heard_before: float) -> list[str]:
        silent = [s.host.host_id for s in self.silent_up(heard_before)]
        chosen = [host_id for host_id in silent if host_id in host_ids]
        for host_id in chosen:
            self._set(host_id, HostStatus.DOWN)
        return chosen

    def silent_up(self, heard_before: float) -> list[SilentHost]:
        up = {h: s for h, (_, _, s) in self.store.fleet.items()}
        return [
            SilentHost(where, self.heard[where.host_id])
            for where, status in sorted(up.items(), key=lambda item: item[0].host_id)
            if status is HostStatus.UP and self.heard[where.host_id] < heard_before
        ]

    def misplaced(self) -> list[tuple[HostAddress, list[str]]]:
        found = []
        for where, (_, _, status) in self.store.fleet.items():
            agent = self.agents[where.host_id]
            runs = [a for a in agent.specs if a not in agent.deleted]
            stale = [
                a
                for a in runs
                if self.store.amphorae[a].status in GONE or self.store.hosts[a] != where
            ]
            if status is HostStatus.UP and stale:
                found.append((where, stale))
        return found


GRACE = 10.0


class Answering(HostProbe):
    """The hosts of a set answer on their agents' ports (restarting agents); no other."""

    def __init__(self, hosts: set[str]) -> None:
        self.hosts = hosts

    def answers(self, host: HostAddress) -> bool:
        return host.host_id in self.hosts


class World:
    def __init__(
        self,
        tmp_path: Path,
        *,
        hosts_first: bool = False,
        probe: DataPlaneProbe | None = None,
        answering: set[str] | None = None,
    ) -> None:
        """``hosts_first``: the amphora sweeper marks silent hosts DOWN first, as the
        health manager wires it (``lbaas.health.service``); ``probe``: the data-plane
        probe, started a second ahead of the hosts' and the amphorae's silence;
        ``answering``: the hosts whose kernels answer the host probe (None: no host
        probe), with a restart grace of ``GRACE``."""
        self.clock = FakeClock(T0)
        self.store = MemoryAmphoraStore()
        for where in HOSTS:
            self.store.fleet[where] = ("nova", 10, HostStatus.UP)
        self.agents = {h.host_id: RecordingAgent() for h in HOSTS}
        legacy: Any = RecordingAgent(unreachable=True)
        pool = AgentPool(lambda h: self.agents[h.host_id], legacy)  # type: ignore[arg-type,return-value]
        settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
        self.provider = AmphoraProvider(
            ProviderContext(settings), store=self.store, agents=pool, clock=self.clock
        )
        self.health = InMemoryHealthStore()
        self.amphorae = StaleAmphoraSweeper(
            self.health,
            stale_after=3.0,
            failover_threshold=0.5,
            clock=self.clock,
            silent_hosts=(lambda: self.host_sweeper.mark_down()) if hosts_first else tuple,
            probe=probe,
            probe_lead=1.0 if probe is not None else 0.0,
            restarting_hosts=lambda: self.host_sweeper.restarting,
        )
        self.answering = answering
        verdicts = None if answering is None else HostVerdicts(Answering(answering), every=0.0)
        self.hosts = Hosts(self.store, self.agents)
        self.host_sweeper = HostSweeper(
            self.hosts,
            stale_after=1.5,
            clock=self.clock,
            cleaner=StaleAmphoraCleaner(self.hosts, pool),
            on_down=self.amphorae.fail_over_hosts,
            probe_lead=1.0 if probe is not None else 0.0,
            on_suspect=self.amphorae.suspect_hosts,
            verdicts=verdicts,
            restart_grace=GRACE,
            settle=3.0,
        )

    def place(self, name: str) -> tuple[Any, str, str]:
        """A SINGLE load balancer placed and heard from; it, its amphora and its host."""
        lb = load_balancer([listener("web")], [])
        lb = replace(lb, id=f"lb-{name}")
        self.provider.apply(lb, Claim(lb.id, 1, "w", 0, rebuild=False))
        [amphora] = self.store.live_amphorae(lb.id)
        host = self.store.hosts[amphora].host_id
        self.health.add_amphora(AmphoraId(amphora), LoadBalancerId(lb.id), T0, host=host)
        self.health.put_graph(lb)
        return lb, amphora, host

    def hear_all_but(self, lost: set[str]) -> None:
        for host_id in self.hosts.heard:
            if host_id not in lost:
                self.hosts.heard[host_id] = self.clock()


def test_a_host_marked_down_has_its_amphorae_failed_over_in_the_same_sweep(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    placed = [world.place(str(i)) for i in range(3)]
    lost = placed[0][2]
    world.clock.advance(2.0)  # past the hosts' 1.5 s, within the amphorae's 3 s
    world.hear_all_but({lost})
    assert world.amphorae.sweep().failovers_requested == ()  # amphora silence: not yet
    assert world.host_sweeper.sweep() == [lost]
    on_lost = sorted(a for _, a, h in placed if h == lost)
    assert sorted(world.health.failover_requests()) == on_lost


def test_two_of_three_hosts_down_at_once_is_a_storm_and_nothing_is_failed_over(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    placed = [world.place(str(i)) for i in range(3)]
    lost = {h for _, _, h in placed[:2]}
    assert len(lost) == 2
    world.clock.advance(2.0)
    world.hear_all_but(lost)
    assert world.host_sweeper.sweep() == sorted(lost)
    assert world.health.failover_requests() == []
    assert world.amphorae.alarm is not None and "2 of 3 hosts" in world.amphorae.alarm


def test_a_down_host_gets_no_call_and_its_leftover_is_removed_when_it_is_back(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    lb, old, lost = world.place("x")
    world.clock.advance(2.0)
    world.hear_all_but({lost})
    world.host_sweeper.sweep()
    before = (world.agents[lost].calls, list(world.agents[lost].gets))
    world.provider.apply(lb, Claim(lb.id, 1, "w", 0, rebuild=True), rebuild=True)
    assert (world.agents[lost].calls, world.agents[lost].gets) == before
    assert world.agents[lost].deleted == []
    assert world.provider.skipped_removals == [(lost, old)]
    assert world.store.amphorae[old].status is AmphoraStatus.DELETED
    [new] = world.store.live_amphorae(lb.id)
    assert world.store.hosts[new].host_id != lost
    world.clock.advance(0.5)  # the cleaner's own cadence
    world.hosts.record(
        HostAnnouncement(lost, "127.0.0.1", 9441, "nova", 10, (old,)), 2, 1, world.clock()
    )
    world.host_sweeper.sweep()
    assert world.agents[lost].deleted == [old]


def test_the_amphora_sweeper_marks_a_silent_host_down_before_it_fails_over(
    tmp_path: Path,
) -> None:
    # Amphora and host heartbeats stop together and the amphora sweep runs first: the race
    # of issue 29, in which the failover called the lost host, still UP, and waited 3 s.
    world = World(tmp_path, hosts_first=True)
    placed = [world.place(str(i)) for i in range(3)]
    lb, old, lost = placed[0]
    world.clock.advance(3.5)  # past both the hosts' 1.5 s and the amphorae's 3 s
    world.hear_all_but({lost})
    for _, amphora, host in placed[1:]:  # the others keep heartbeating
        world.health.add_amphora(
            AmphoraId(amphora), LoadBalancerId(f"lb-{host}"), world.clock(), host=host
        )
    result = world.amphorae.sweep()
    assert result.failovers_requested == (old,)
    assert world.store.fleet[HOSTS[int(lost[1]) - 1]][2] is HostStatus.DOWN
    assert world.host_sweeper.sweep() == []  # already DOWN: nothing left to do
    before = world.agents[lost].calls
    world.provider.apply(lb, Claim(lb.id, 1, "w", 0, rebuild=True), rebuild=True)
    assert world.agents[lost].calls == before
    assert world.provider.skipped_removals == [(lost, old)]


def test_a_failover_skips_a_host_still_up_that_has_missed_two_heartbeats(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    lb, old, lost = world.place("x")
    world.clock.advance(2.2)  # 2.2 s since the hosts' last heartbeat (interval 1 s)
    before = world.agents[lost].calls
    world.provider.apply(lb, Claim(lb.id, 1, "w", 0, rebuild=True), rebuild=True)
    assert world.agents[lost].calls == before  # UP, yet not called
    assert world.provider.skipped_removals == [(lost, old)]
    assert world.store.amphorae[old].status is AmphoraStatus.DELETED


def test_a_failover_still_calls_a_host_heard_within_two_heartbeats(tmp_path: Path) -> None:
    world = World(tmp_path)
    lb, old, host = world.place("x")
    world.clock.advance(5.0)
    world.hear_all_but(set())
    world.clock.advance(0.5)
    world.provider.apply(lb, Claim(lb.id, 1, "w", 0, rebuild=True), rebuild=True)
    assert world.agents[host].deleted == [old]
    assert world.provider.skipped_removals == []


class DeadVips(DataPlaneProbe):
    """Nothing answers on any VIP (every host of theirs is lost); records who was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def serving(self, graph: Any) -> bool:
        self.asked.append(str(graph.id))
        return False


def test_a_silent_hosts_amphorae_are_probed_ahead_and_failed_over_when_it_is_marked_down(
    tmp_path: Path,
) -> None:
    """Issue 29: the amphora's own heartbeat came after the host's last one, so its own
    silence starts no probe ahead; the host's silence must, or the failover waits a whole
    probe timeout after the host is marked DOWN."""
    probe = DeadVips()
    world = World(tmp_path, probe=probe)
    lb, amphora, lost = world.place("x")
    world.clock.advance(0.3)  # host silent 0.3 s: not a suspect (1.5 s - 1.0 s lead)
    world.hear_all_but({lost})
    world.health.record_heartbeat(AmphoraId(amphora), LoadBalancerId(lb.id), world.clock())
    assert world.host_sweeper.sweep() == [] and probe.asked == []
    world.clock.advance(0.4)  # host silent 0.7 s: its amphorae are probed ahead
    world.hear_all_but({lost})
    assert world.host_sweeper.sweep() == []
    wait_until(lambda: probe.asked == [lb.id], 5.0, "the probe started ahead of the host")
    assert world.amphorae.sweep().failovers_requested == ()  # amphora silent 0.4 s only
    world.clock.advance(0.9)  # host silent 1.6 s: DOWN, the verdict already in
    world.hear_all_but({lost})
    assert world.host_sweeper.sweep() == [lost]
    assert world.health.failover_requests() == [amphora]
    assert probe.asked == [lb.id]  # no second probe after the host was marked DOWN


def test_a_host_heard_again_has_its_probes_ahead_dropped(tmp_path: Path) -> None:
    probe = DeadVips()
    world = World(tmp_path, probe=probe)
    lb, amphora, slow = world.place("x")
    world.clock.advance(0.7)
    world.hear_all_but({slow})
    world.host_sweeper.sweep()
    wait_until(lambda: probe.asked == [lb.id], 5.0, "the probe started ahead of the host")
    world.hear_all_but(set())  # the host was only slow
    world.health.record_heartbeat(AmphoraId(amphora), LoadBalancerId(lb.id), world.clock())
    world.host_sweeper.sweep()
    world.amphorae.sweep()  # forgets probes of amphorae no longer suspect
    world.clock.advance(3.5)  # then host and amphora are lost for good
    world.host_sweeper.sweep()
    assert world.host_sweeper.sweep() == []  # already DOWN
    wait_until(lambda: len(probe.asked) == 2, 5.0, "a probe of this silence, not the old one")
    assert world.health.failover_requests() == [amphora]


def _pair_across(world: World, lost: str) -> tuple[AmphoraId, AmphoraId]:
    """An ACTIVE_STANDBY load balancer heard from: its amphora on ``lost``, its other one
    on another host."""
    other = next(h.host_id for h in HOSTS if h.host_id != lost)
    lb = replace(
        load_balancer([listener("web")], [], ident="lb-pair"), topology=Topology.ACTIVE_STANDBY
    )
    world.health.put_graph(lb)
    on_lost, elsewhere = AmphoraId("amp-pair-1"), AmphoraId("amp-pair-2")
    world.health.add_amphora(on_lost, LoadBalancerId(lb.id), T0, host=lost)
    world.health.add_amphora(elsewhere, LoadBalancerId(lb.id), T0, host=other)
    return on_lost, elsewhere


def _pair_on_answering_host(world: World) -> tuple[str, AmphoraId, AmphoraId]:
    """A SINGLE load balancer placed, and a pair across its host (which answers the host
    probe) and another: the host, the pair's amphora on it and the other one."""
    assert world.answering is not None
    _, _, host = world.place("x")
    on_host, survivor = _pair_across(world, host)
    world.answering.add(host)
    return host, on_host, survivor


def test_a_silent_host_that_answers_is_a_restarting_agent_and_its_pairs_are_kept(
    tmp_path: Path,
) -> None:
    """Issue 35: an agent restart (an upgrade step) stops host and amphora heartbeats alike;
    its pair amphorae were rebuilt as for a lost host. Its SINGLE amphora is still judged
    by its VIP (here no probe: no evidence, failed over)."""
    world = World(tmp_path, answering=set())
    _, single, restarting = world.place("x")
    assert world.answering is not None
    world.answering.add(restarting)
    pair_amphora, survivor = _pair_across(world, restarting)
    world.clock.advance(3.5)  # past the hosts' 1.5 s and the amphorae's 3 s
    world.hear_all_but({restarting})
    world.health.record_heartbeat(survivor, LoadBalancerId("lb-pair"), world.clock())
    assert world.host_sweeper.sweep() == []
    assert world.host_sweeper.restarting == {restarting}
    swept = world.amphorae.sweep()
    assert swept.failovers_requested == (single,)
    assert pair_amphora in swept.agent_silent
    world.clock.advance(GRACE)  # the grace is over: a lost host after all
    world.hear_all_but({restarting})
    world.health.record_heartbeat(survivor, LoadBalancerId("lb-pair"), world.clock())
    assert world.host_sweeper.sweep() == [restarting]
    assert world.host_sweeper.restarting == frozenset()
    assert pair_amphora in world.health.failover_requests()
    assert survivor not in world.health.failover_requests()


def test_a_restarting_host_that_stops_answering_is_marked_down(tmp_path: Path) -> None:
    world = World(tmp_path, answering=set())
    host, pair_amphora, _ = _pair_on_answering_host(world)
    world.clock.advance(2.0)
    world.hear_all_but({host})
    assert world.host_sweeper.sweep() == [] and world.host_sweeper.restarting == {host}
    assert world.answering is not None
    world.answering.discard(host)  # its links went down: the next probe says nothing
    wait_until(lambda: world.host_sweeper.sweep() == [host], 5.0, "the host marked DOWN")
    assert pair_amphora in world.health.failover_requests()


def test_a_silent_host_that_does_not_answer_is_lost_at_once(tmp_path: Path) -> None:
    world = World(tmp_path, answering=set())
    _, amphora, lost = world.place("x")
    world.clock.advance(2.0)
    world.hear_all_but({lost})
    assert world.host_sweeper.sweep() == [lost]
    assert world.host_sweeper.restarting == frozenset()
    assert world.health.failover_requests() == [amphora]


def test_a_returning_agents_pairs_are_kept_until_their_own_heartbeats_can_resume(
    tmp_path: Path,
) -> None:
    """The lab's upgrade: the agent's first host heartbeat came 40 ms before the sweep
    and a round before its amphorae's; the pair amphorae, still silent, were failed over."""
    world = World(tmp_path, answering=set())
    host, pair_amphora, survivor = _pair_on_answering_host(world)
    world.clock.advance(3.5)
    world.hear_all_but({host})
    world.health.record_heartbeat(survivor, LoadBalancerId("lb-pair"), world.clock())
    assert world.host_sweeper.sweep() == [] and world.host_sweeper.restarting == {host}
    world.clock.advance(0.5)
    world.hear_all_but(set())  # the new agent's first host heartbeat
    world.health.record_heartbeat(survivor, LoadBalancerId("lb-pair"), world.clock())
    assert world.host_sweeper.sweep() == [] and world.host_sweeper.restarting == {host}
    assert pair_amphora not in world.amphorae.sweep().failovers_requested
    world.clock.advance(3.1)  # settled, and the amphora still silent: failed over
    world.hear_all_but(set())
    world.health.record_heartbeat(survivor, LoadBalancerId("lb-pair"), world.clock())
    world.host_sweeper.sweep()
    assert world.host_sweeper.restarting == frozenset()
    assert pair_amphora in world.amphorae.sweep().failovers_requested
