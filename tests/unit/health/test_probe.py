"""Point 5 of issue 10: a silent agent in front of a serving data plane is not failed over.

The sweeper tests use a probe whose answer the test sets; the probe tests run
``ListenerProbe`` against real sockets on 127.0.0.1 that behave like a serving HAProxy, a
stopped one (listening, never accepting: the kernel still completes the handshake), one
that refuses, and one that is gone.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.metrics import HealthManagerCollector
from lbaas.health.probe import DataPlaneProbe, ListenerProbe
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.model.enums import ListenerProtocol, Topology
from lbaas.model.graph import AmphoraId, LoadBalancer, LoadBalancerId
from lbaas.wire.heartbeat.envelope import ReplayGuard
from tests.support import graphs
from tests.support.clock import FakeClock
from tests.support.prometheus import Exposition

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
            if behaviour == "http":
                conn.recv(1024)
                conn.sendall(b"HTTP/1.0 503 Service Unavailable\r\n\r\n")
            # "closing": accepted and closed at once, as HAProxy does without a server


def test_the_probe_tells_a_serving_haproxy_from_a_stopped_or_dead_one(
    listening: Callable[[str], int],
) -> None:
    probe = ListenerProbe(timeout=0.5)
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
