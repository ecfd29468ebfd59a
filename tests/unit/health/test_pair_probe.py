"""Issue 34: a silent amphora of an ACTIVE_STANDBY pair is asked on its own address.

Under load, healthy pair amphorae were heard more than ``stale_after`` late and failed
over, since the pair's VIP (answered by either amphora) could not vouch for one of them.
The sweeper tests pass in an ``OwnAddressProbe`` whose answers the test sets: a late
amphora whose own address answers is kept, a dead one is failed over, and one on a host
marked DOWN is failed over without being asked. ``PeerPortProbe`` itself is run against
real sockets on 127.0.0.1: a process that acts on the connection, a stopped one (the
kernel still completes the handshake) and none at all.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.pair_probe import OwnAddressProbe, PeerPortProbe
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.model.enums import Topology
from lbaas.model.graph import AmphoraId, LoadBalancerId
from tests.support import graphs
from tests.support.clock import FakeClock
from tests.support.waiting import wait_until

LB = LoadBalancerId("lb-pair")
MASTER, BACKUP = AmphoraId("amp-master"), AmphoraId("amp-backup")
ADDRESSES = {MASTER: "10.1.0.6", BACKUP: "10.1.0.7"}
HOSTS = {MASTER: "h1", BACKUP: "h2"}


class OwnAddresses(OwnAddressProbe):
    """Answers for the addresses in ``alive``; records every address asked."""

    def __init__(self, alive: set[str]) -> None:
        self.alive = alive
        self.asked: list[str] = []

    def answers(self, address: str) -> bool:
        self.asked.append(address)
        return address in self.alive


def pair_store(clock: FakeClock, *, addresses: bool = True) -> InMemoryHealthStore:
    store = InMemoryHealthStore()
    graph = graphs.load_balancer([graphs.listener("web")], [], ident=LB)
    store.put_graph(dataclasses.replace(graph, topology=Topology.ACTIVE_STANDBY))
    for amphora in (MASTER, BACKUP):
        address = ADDRESSES[amphora] if addresses else None
        store.add_amphora(amphora, LB, clock(), host=HOSTS[amphora], address=address)
    return store


def sweeper(
    store: InMemoryHealthStore,
    clock: FakeClock,
    probe: OwnAddressProbe,
    *,
    lost: tuple[str, ...] = (),
    probe_lead: float = 0.0,
) -> StaleAmphoraSweeper:
    return StaleAmphoraSweeper(
        store,
        stale_after=3.0,
        failover_threshold=0.6,
        clock=clock,
        pair_probe=probe,
        silent_hosts=lambda: lost,
        probe_lead=probe_lead,
    )


def test_a_late_pair_amphora_whose_own_address_answers_is_not_failed_over() -> None:
    """The lab's storm: the MASTER's heartbeats come late (a busy agent, a lagging health
    manager) while its HAProxy serves; it is agent-degraded, not failed over, until its
    own address stops answering."""
    clock = FakeClock(1_000.0)
    store = pair_store(clock)
    probe = OwnAddresses({ADDRESSES[MASTER]})
    swept = sweeper(store, clock, probe)
    clock.advance(5.0)
    store.record_heartbeat(BACKUP, LB, clock())
    for _ in range(3):
        result = swept.sweep()
        assert result.stale == (MASTER,) and result.agent_silent == (MASTER,)
        assert result.failovers_requested == ()
    assert probe.asked == [ADDRESSES[MASTER]] * 3
    assert store.failover_requests() == []

    probe.alive.clear()  # now its HAProxy is gone: refused, or nothing answers
    result = swept.sweep()
    assert result.failovers_requested == (MASTER,) and result.agent_silent == ()
    assert store.failover_requests() == [MASTER]


def test_a_dead_pair_amphora_is_failed_over_in_the_sweep_that_finds_it_silent() -> None:
    clock = FakeClock(1_000.0)
    store = pair_store(clock)
    probe = OwnAddresses({ADDRESSES[BACKUP]})  # only the survivor would answer
    swept = sweeper(store, clock, probe)
    clock.advance(3.5)
    store.record_heartbeat(BACKUP, LB, clock())
    result = swept.sweep()
    assert result.failovers_requested == (MASTER,)
    assert probe.asked == [ADDRESSES[MASTER]]  # the survivor, heard from, is not asked


def test_a_pair_amphora_of_a_host_marked_down_is_failed_over_without_asking() -> None:
    """A host marked DOWN did not answer its own probe: its pair amphora is rebuilt in that
    sweep, as fast as before, whatever a (stale) answer on its address would say."""
    clock = FakeClock(1_000.0)
    store = pair_store(clock)
    probe = OwnAddresses(set(ADDRESSES.values()))
    clock.advance(3.5)
    store.record_heartbeat(BACKUP, LB, clock())
    result = sweeper(store, clock, probe, lost=(HOSTS[MASTER],)).sweep()
    assert result.failovers_requested == (MASTER,)
    assert probe.asked == []

    clock = FakeClock(1_000.0)  # marked DOWN by the host sweeper, heard 1 s ago
    store = pair_store(clock)
    clock.advance(1.0)
    result = sweeper(store, clock, probe).fail_over_hosts([HOSTS[MASTER]])
    assert result.failovers_requested == (MASTER,)
    assert probe.asked == []


def test_a_pair_amphora_without_a_recorded_address_fails_over_on_silence_as_before() -> None:
    clock = FakeClock(1_000.0)
    store = pair_store(clock, addresses=False)
    probe = OwnAddresses(set(ADDRESSES.values()))
    swept = sweeper(store, clock, probe)
    clock.advance(3.5)
    store.record_heartbeat(BACKUP, LB, clock())
    assert swept.sweep().failovers_requested == (MASTER,)
    assert probe.asked == []


def test_the_own_address_is_probed_ahead_so_a_gone_namespace_costs_no_timeout() -> None:
    """A namespace gone answers nothing: the probe's whole timeout. Started ``probe_lead``
    before the silence reaches ``stale_after``, its verdict is in when the amphora is
    stale, and no second probe is made."""
    clock = FakeClock(1_000.0)
    store = pair_store(clock)
    probe = OwnAddresses(set())
    swept = sweeper(store, clock, probe, probe_lead=1.0)
    clock.advance(2.5)
    store.record_heartbeat(BACKUP, LB, clock())
    assert swept.sweep().failovers_requested == ()
    wait_until(lambda: probe.asked == [ADDRESSES[MASTER]], 5.0, "the probe started ahead")
    clock.advance(0.6)
    store.record_heartbeat(BACKUP, LB, clock())
    assert swept.sweep().failovers_requested == (MASTER,)
    assert probe.asked == [ADDRESSES[MASTER]]


@pytest.fixture
def listening() -> Iterator[Callable[[], socket.socket]]:
    """Makes listening sockets on 127.0.0.1 (never accepting unless a test does)."""
    made: list[socket.socket] = []

    def listen() -> socket.socket:
        made.append(socket.socket())
        made[-1].bind(("127.0.0.1", 0))
        made[-1].listen(4)
        return made[-1]

    yield listen
    for sock in made:
        sock.close()


def _accept_and_close(server: socket.socket) -> None:
    conn, _ = server.accept()
    with conn:
        conn.recv(16)  # the probe's half-close: then closed, as HAProxy's peers do


def _probe(server: socket.socket) -> PeerPortProbe:
    return PeerPortProbe(timeout=0.5, port=int(server.getsockname()[1]))


def test_the_peer_port_probe_takes_only_a_process_acting_on_it_as_life(
    listening: Callable[[], socket.socket],
) -> None:
    server = listening()
    acting = threading.Thread(target=_accept_and_close, args=(server,))
    acting.start()
    try:
        assert _probe(server).answers("127.0.0.1")
    finally:
        acting.join(5)
    # Stopped (or wedged): the kernel completes the handshake, then nothing acts.
    assert not _probe(listening()).answers("127.0.0.1")
    dead = listening()
    probe = _probe(dead)
    dead.close()  # HAProxy dead: the kernel refuses the connection
    assert not probe.answers("127.0.0.1")
