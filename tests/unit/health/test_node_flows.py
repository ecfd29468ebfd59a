"""A distributed listener's connections: each node's flows folded apart, never lost."""

from __future__ import annotations

from lbaas.health.counters import listener_stats
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.node_flows import fold_node_flows, node_record_id
from lbaas.model.graph import ListenerId
from lbaas.wire.l4 import L4ServiceStatus

from .builders import LB_ID, listener, loadbalancer

GRAPH = loadbalancer([listener("li-1")])


def _round(store: InMemoryHealthStore, flows: dict[str, int | None]) -> int:
    """One poll round in which each node of ``flows`` answered with that many flows on
    ``li-1`` (None: the node answered without this load balancer)."""
    by_node: dict[str, dict[str, L4ServiceStatus] | None] = {
        node: {} if count is None else {
            str(LB_ID): L4ServiceStatus(loadbalancer_id=LB_ID, new_flows={"li-1": count, "gone": 7})
        }
        for node, count in flows.items()
    }  # fmt: skip
    return fold_node_flows(store, GRAPH, by_node)


def _connections(store: InMemoryHealthStore) -> int:
    return listener_stats(store.all_counter_records(ListenerId("li-1"))).total_connections


def test_each_nodes_flows_are_summed_and_a_missed_round_counts_nothing_twice() -> None:
    store = InMemoryHealthStore()
    assert _round(store, {"n1": 5, "n2": 3}) == 2
    assert _connections(store) == 8
    assert _round(store, {"n1": 9}) == 1  # n2 did not answer this round
    assert _connections(store) == 12
    assert _round(store, {"n1": 9, "n2": 4, "n3": None}) == 2
    assert _connections(store) == 13
    # Only the graph's listeners are kept: "gone" was deleted since the node's view.
    assert set(store.counter_records(node_record_id("n1"))) == {ListenerId("li-1")}


def test_a_nodes_reset_table_keeps_what_it_had_counted() -> None:
    store = InMemoryHealthStore()
    _round(store, {"n1": 10, "n2": 1})
    _round(store, {"n1": 2, "n2": 1})  # n1's table reloaded: its rule counters start again
    assert _connections(store) == 13
    assert node_record_id("n1") != node_record_id("n2")
    assert len(node_record_id("n1")) == 36  # the listener_stats amphora id column's width
