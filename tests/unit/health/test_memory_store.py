"""The in-memory store keeps the HealthStore contract the SQL store must keep too."""

from __future__ import annotations

from collections.abc import Mapping

from lbaas.health.counters import CounterRecord, fold_report
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.rollup import roll_up
from lbaas.health.store import AmphoraHeartbeat
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId

from .builders import LB_ID, counters, listener, loadbalancer

AMP = AmphoraId("amp-1")


def test_last_seen_never_moves_back() -> None:
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB_ID)
    assert store.record_heartbeat(AMP, LB_ID, 20.0)
    assert store.record_heartbeat(AMP, LB_ID, 10.0)
    assert store.list_amphora_heartbeats() == [
        AmphoraHeartbeat(amphora_id=AMP, loadbalancer_id=LB_ID, last_seen=20.0)
    ]


def test_heartbeat_for_another_load_balancer_is_refused() -> None:
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB_ID)
    assert not store.record_heartbeat(AMP, LoadBalancerId("lb-2"), 1.0)
    assert store.list_amphora_heartbeats() == []


def test_statuses_are_not_written_while_pending_or_once_gone() -> None:
    store = InMemoryHealthStore()
    graph = loadbalancer([listener("l")])
    statuses = roll_up(graph, None)
    assert not store.apply_operating_statuses(LB_ID, statuses)  # no such load balancer
    store.put_graph(graph)
    store.set_pending(LB_ID)
    assert not store.apply_operating_statuses(LB_ID, statuses)
    store.set_pending(LB_ID, False)
    assert store.apply_operating_statuses(LB_ID, statuses)
    assert store.statuses(LB_ID) == statuses


def test_failover_is_requested_once_until_it_finishes() -> None:
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB_ID, last_seen=1.0)
    assert store.request_failover(AMP)
    assert not store.request_failover(AMP)
    store.finish_failover(AMP)
    assert store.request_failover(AMP)
    assert not store.request_failover(AmphoraId("gone"))
    assert store.failover_requests() == [AMP, AMP]


def test_counter_update_sees_this_amphoras_records_and_keeps_the_others() -> None:
    store = InMemoryHealthStore()
    a, b = ListenerId("a"), ListenerId("b")
    other = AmphoraId("amp-2")
    store.update_listener_counters(AMP, LB_ID, lambda cur: fold_report(cur, 1, {a: counters(5)}))
    store.update_listener_counters(other, LB_ID, lambda cur: fold_report(cur, 1, {a: counters(7)}))
    seen: list[set[ListenerId]] = []

    def update(current: Mapping[ListenerId, CounterRecord]) -> dict[ListenerId, CounterRecord]:
        seen.append(set(current))
        return fold_report(current, 1, {b: counters(1)})

    store.update_listener_counters(AMP, LB_ID, update)
    assert seen == [{a}]
    assert set(store.counter_records(AMP)) == {a, b}
    assert len(store.all_counter_records(a)) == 2
