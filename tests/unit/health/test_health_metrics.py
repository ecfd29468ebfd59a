"""The health manager's figures in Prometheus' format: heartbeats by outcome, failovers
started and the storm guard, after real datagrams through the receiver's gates and real
sweeps, read back with prometheus_client's parser."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.metrics import HealthManagerCollector
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.model.graph import AmphoraId, LoadBalancerId
from lbaas.wire.heartbeat.envelope import ReplayGuard
from tests.support.clock import FakeClock
from tests.support.prometheus import Exposition

from .builders import LB_ID, listener, loadbalancer, member, monitor, pool
from .test_receiver import AMP, KEY, NOW, heartbeat


def scrape(receiver: HeartbeatReceiver, sweeper: StaleAmphoraSweeper) -> Exposition:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HealthManagerCollector(receiver, sweeper))
    return Exposition(generate_latest(registry).decode())


def test_heartbeats_failovers_and_the_storm_guard_are_counted() -> None:
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB_ID)
    store.put_graph(loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=monitor())]))
    clock = FakeClock(NOW)
    receiver = HeartbeatReceiver(
        HeartbeatProcessor(store, clock=clock), KEY, ReplayGuard(max_age=30.0, clock=clock)
    )
    sweeper = StaleAmphoraSweeper(store, stale_after=3.0, failover_threshold=0.5, clock=clock)
    for sequence in (1, 2, 3):
        receiver.handle_datagram(heartbeat(sequence), "127.0.0.1")
    receiver.handle_datagram(heartbeat(3), "127.0.0.1")  # a replay
    receiver.handle_datagram(heartbeat(4, key=b"not-our-key"), "127.0.0.1")
    receiver.handle_datagram(heartbeat(5, sent_at=NOW - 300), "127.0.0.1")  # late
    receiver.handle_datagram(b"\x00garbage", "127.0.0.1")

    seen = scrape(receiver, sweeper)
    assert seen.families["lbaas_heartbeats"] == "counter"
    assert seen.value("lbaas_heartbeats_total", outcome="accepted") == 3
    assert seen.value("lbaas_heartbeats_total", outcome="rejected_replay") == 1
    assert seen.value("lbaas_heartbeats_total", outcome="rejected_late") == 1
    assert seen.value("lbaas_heartbeats_total", outcome="rejected_signature") == 2
    assert seen.value("lbaas_failovers_started_total") == 0
    assert seen.value("lbaas_failover_circuit_open", scope="all") == 0

    # Three more amphorae, all heard now; the first one falls silent: one failover.
    others = [AmphoraId(f"amp-{n}") for n in (2, 3, 4)]
    for amp in others:
        store.add_amphora(amp, LoadBalancerId(f"lb-{amp}"), last_seen=NOW)
    store.add_amphora(AMP, LB_ID, last_seen=NOW)
    clock.advance(4.0)
    for amp in others:
        store.record_heartbeat(amp, LoadBalancerId(f"lb-{amp}"), clock())
    assert sweeper.sweep().failovers_requested == (AMP,)
    assert scrape(receiver, sweeper).value("lbaas_failovers_started_total") == 1

    # Then every amphora falls silent: the storm guard opens the circuit.
    clock.advance(10.0)
    assert sweeper.sweep().alarm is not None
    stormy = scrape(receiver, sweeper)
    assert stormy.value("lbaas_failover_circuit_open", scope="all") == 1
    assert stormy.value("lbaas_failovers_started_total") == 1
