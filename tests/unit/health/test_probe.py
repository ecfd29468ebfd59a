"""Point 5 of issue 10: a silent agent in front of a serving data plane is not failed over.

The sweeper tests use a probe whose answer the test sets; the probe tests run
``ListenerProbe`` against real sockets on 127.0.0.1 that behave like a serving HAProxy, a
stopped one (listening, never accepting: the kernel still completes the handshake), one
that refuses, and one that is gone.
"""

from __future__ import annotations

import dataclasses
import errno
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from lbaas.amphora.vip_probe import connect_failure
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.metrics import HealthManagerCollector
from lbaas.health.probe import DataPlaneProbe, ListenerProbe
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.model.enums import ListenerProtocol, Topology
from lbaas.model.graph import AmphoraId, LoadBalancer, LoadBalancerId
from lbaas.render.haproxy.probe_source import VIP_PROBE_SOURCE_PORT, answered_by_reset
from lbaas.wire.heartbeat.envelope import ReplayGuard
from tests.support import graphs
from tests.support.clock import FakeClock
from tests.support.prometheus import Exposition
from tests.support.waiting import wait_until

AMP = AmphoraId("amp-1")
LB = LoadBalancerId("lb-1")


class SetProbe(DataPlaneProbe):
    def __init__(self) -> None:
        self.answer = True
        self.asked: list[LoadBalancerId] = []

    def serving(self, graph: LoadBalancer) -> bool:
        self.asked.append(graph.id)
        return self.answer


def lb_on(port: int, protocol: ListenerProtocol = ListenerProtocol.HTTP) -> LoadBalancer:
    listener = graphs.listener("l", protocol, port)
    return graphs.load_balancer([listener], [], vip_address="127.0.0.1", ident=LB)


def test_a_silent_agent_whose_data_plane_answers_is_not_failed_over() -> None:
    clock = FakeClock(1_000.0)
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB, last_seen=clock())
    store.put_graph(lb_on(80))
    probe = SetProbe()
    sweeper = StaleAmphoraSweeper(
        store, stale_after=3.0, failover_threshold=0.5, clock=clock, probe=probe
    )
    clock.advance(30)  # the agent is paused for 30 s; HAProxy serves on
    for _ in range(3):
        result = sweeper.sweep()
        assert result.stale == (AMP,) and result.agent_silent == (AMP,)
        assert result.failovers_requested == ()
    assert store.failover_requests() == []
    assert probe.asked == [LB, LB, LB]

    probe.answer = False  # now HAProxy is gone too
    result = sweeper.sweep()
    assert result.failovers_requested == (AMP,) and result.agent_silent == ()
    assert store.failover_requests() == [AMP]


def test_a_silent_amphora_of_a_pair_is_failed_over_though_its_vip_answers() -> None:
    """The VIP of an ACTIVE_STANDBY pair answers from the survivor once the silent MASTER's
    host is lost or cut off: that is no evidence for the silent one, which is rebuilt."""
    clock = FakeClock(1_000.0)
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB, last_seen=clock())
    store.put_graph(dataclasses.replace(lb_on(80), topology=Topology.ACTIVE_STANDBY))
    probe = SetProbe()
    sweeper = StaleAmphoraSweeper(
        store, stale_after=3.0, failover_threshold=0.5, clock=clock, probe=probe
    )
    clock.advance(30)
    result = sweeper.sweep()
    assert result.failovers_requested == (AMP,) and result.agent_silent == ()
    assert store.failover_requests() == [AMP]
    assert probe.asked == []


@pytest.fixture
def listening() -> Iterator[Callable[[str], int]]:
    """Start a TCP server on 127.0.0.1 in one of a few behaviours; returns its port."""
    sockets: list[socket.socket] = []
    threads: list[threading.Thread] = []
    stop = threading.Event()

    def start(behaviour: str) -> int:
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0.1)
        sockets.append(server)
        if behaviour != "stopped":
            threads.append(threading.Thread(target=_serve, args=(server, behaviour, stop)))
            threads[-1].start()
        return int(server.getsockname()[1])

    yield start
    stop.set()
    for thread in threads:
        thread.join()
    for server in sockets:
        server.close()


def _serve(server: socket.socket, behaviour: str, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            conn, _ = server.accept()
        except OSError:
            continue
        with conn:
            if conn.getpeername()[1] == VIP_PROBE_SOURCE_PORT:
                continue  # closed at once, as every frontend rejects the probe source
            if behaviour == "http":
                conn.recv(1024)
                conn.sendall(b"HTTP/1.0 503 Service Unavailable\r\n\r\n")
            # "closing": accepted and closed at once, as HAProxy does without a server


@pytest.mark.parametrize("from_probe_source", [True, False])
def test_the_probe_tells_a_serving_haproxy_from_a_stopped_or_dead_one(
    listening: Callable[[str], int], from_probe_source: bool
) -> None:
    probe = ListenerProbe(timeout=0.5, from_probe_source=from_probe_source)
    assert probe.serving(lb_on(listening("http")))
    assert probe.serving(lb_on(listening("closing"), ListenerProtocol.TCP))
    assert not probe.serving(lb_on(listening("stopped")))  # handshake done, no answer
    assert not probe.serving(lb_on(listening("stopped"), ListenerProtocol.TCP))
    unused = socket.socket()
    unused.bind(("127.0.0.1", 0))
    free = int(unused.getsockname()[1])
    unused.close()
    assert not probe.serving(lb_on(free))  # connection refused: HAProxy is gone
    assert not probe.serving(lb_on(listening("http"), ListenerProtocol.UDP))  # not probed


def test_a_disabled_listener_is_not_evidence(listening: Callable[[str], int]) -> None:
    listener = graphs.listener("l", ListenerProtocol.HTTP, listening("http"), admin=False)
    graph = graphs.load_balancer([listener], [], vip_address="127.0.0.1", ident=LB)
    assert not ListenerProbe(timeout=0.5).serving(graph)


def test_a_silent_agent_in_front_of_a_serving_data_plane_is_shown_in_metrics() -> None:
    """Not acted upon, but visible: the gauge counts it until its data plane dies too."""
    clock = FakeClock(1_000.0)
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB, last_seen=clock())
    store.put_graph(lb_on(80))
    probe = SetProbe()
    sweeper = StaleAmphoraSweeper(
        store, stale_after=3.0, failover_threshold=0.5, clock=clock, probe=probe
    )
    registry = CollectorRegistry(auto_describe=False)
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), b"k", ReplayGuard())
    registry.register(HealthManagerCollector(receiver, sweeper))

    def gauge() -> float:
        seen = Exposition(generate_latest(registry).decode())
        return seen.value("lbaas_amphorae_agent_silent")

    sweeper.sweep()
    assert gauge() == 0  # heard from recently
    clock.advance(30)
    sweeper.sweep()
    assert sweeper.agent_silent == {AMP} and gauge() == 1
    probe.answer = False
    sweeper.sweep()
    assert sweeper.agent_silent == set() and gauge() == 0
    assert store.failover_requests() == [AMP]


def _probed_ahead(
    lead: float,
) -> tuple[FakeClock, InMemoryHealthStore, SetProbe, StaleAmphoraSweeper]:
    clock = FakeClock(1_000.0)
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB, last_seen=clock())
    store.put_graph(lb_on(80))
    probe = SetProbe()
    probe.answer = False  # the host is lost: nothing answers on the VIP
    sweeper = StaleAmphoraSweeper(
        store, stale_after=3.0, failover_threshold=0.5, clock=clock, probe=probe,
        probe_lead=1.0,
    )  # fmt: skip
    return clock, store, probe, sweeper


def test_a_silent_amphora_is_probed_a_timeout_ahead_and_the_verdict_used_when_stale() -> None:
    """Issue 29: the probe of a lost host's VIP takes its whole timeout; started when the
    silence reaches stale_after - probe_timeout, its verdict is in when the amphora is
    stale, and the failover does not wait for a second probe."""
    clock, store, probe, sweeper = _probed_ahead(lead=1.0)
    clock.advance(1.5)
    assert sweeper.sweep().stale == () and probe.asked == []  # not suspect yet
    clock.advance(0.7)  # silent 2.2 s: within a timeout of stale
    result = sweeper.sweep()
    assert result.stale == () and result.failovers_requested == ()
    wait_until(lambda: probe.asked == [LB], 5.0, "the probe started ahead")
    clock.advance(0.9)  # silent 3.1 s
    result = sweeper.sweep()
    assert result.failovers_requested == (AMP,)
    assert probe.asked == [LB]  # the verdict taken ahead, no second probe


def test_an_amphora_heard_again_loses_its_probe_ahead() -> None:
    clock, store, probe, sweeper = _probed_ahead(lead=1.0)
    clock.advance(2.2)
    sweeper.sweep()
    wait_until(lambda: probe.asked == [LB], 5.0, "the first probe ahead")  # nothing answered
    store.record_heartbeat(AMP, LB, clock())  # the agent was only slow
    sweeper.sweep()
    probe.answer = True  # from now on the data plane answers: the agent alone stalls
    clock.advance(2.2)
    sweeper.sweep()
    wait_until(lambda: probe.asked == [LB, LB], 5.0, "a new probe ahead")
    clock.advance(0.9)  # stale: the verdict of this silence counts, not the dropped one
    result = sweeper.sweep()
    assert result.stale == (AMP,) and result.agent_silent == (AMP,)
    assert result.failovers_requested == () and store.failover_requests() == []
    assert probe.asked == [LB, LB]


def test_a_reset_is_an_answer_for_both_probes_and_a_refusal_is_not() -> None:
    """The agent's VIP probe and this probe share one judgement (probe_source)."""
    reset = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    not_connected = OSError(errno.ENOTCONN, "Transport endpoint is not connected")
    assert answered_by_reset(reset, connected=False) and connect_failure(reset) is None
    assert not answered_by_reset(refused, connected=False)
    assert connect_failure(refused) == "Connection refused"
    assert answered_by_reset(not_connected, connected=True)
    assert not answered_by_reset(not_connected, connected=False)
