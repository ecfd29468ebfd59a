"""The health manager's memory: what it trusts, and when it stops trusting it."""

from __future__ import annotations

from lbaas.health.known_state import AmphoraLookup, KnownState
from lbaas.health.pending_writes import PendingWrites, StampedUpdate
from lbaas.health.rollup import roll_up
from lbaas.model.enums import ProvisioningStatus
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId

from .builders import LB_ID, listener, loadbalancer

ACTIVE = (ProvisioningStatus.ACTIVE.value, 3)
AMP = AmphoraId("amp-1")


def test_amphorae_known_until_the_database_says_otherwise() -> None:
    known = KnownState(unknown_ttl=1.0)
    assert known.amphora(AMP, 0.0) == AmphoraLookup(cached=False)
    known.remember_amphorae([AMP], {AMP: LB_ID}, 0.0)
    assert known.amphora(AMP, 500.0) == AmphoraLookup(cached=True, loadbalancer_id=LB_ID)
    known.remember_amphorae([AMP], {}, 500.0)  # deleted: unknown, for a while
    assert known.amphora(AMP, 500.5) == AmphoraLookup(cached=True)
    assert known.amphora(AMP, 501.5) == AmphoraLookup(cached=False)


def test_a_load_balancer_is_dropped_when_its_version_moves() -> None:
    known = KnownState()
    graph = loadbalancer([listener("l")])
    other = loadbalancer([], lb_id=LoadBalancerId("lb-2"))
    known.remember_graph(graph, ACTIVE)
    known.remember_graph(other, ACTIVE)
    known.revalidate(
        [LB_ID, other.id], {LB_ID: ACTIVE, other.id: (ProvisioningStatus.ACTIVE.value, 4)}
    )
    assert known.loadbalancer(LB_ID) is not None
    assert known.loadbalancer(other.id) is None
    known.revalidate([LB_ID], {})  # gone
    assert known.loadbalancer(LB_ID) is None


def test_statuses_written_are_trusted_for_a_while() -> None:
    known = KnownState(status_refresh=30.0)
    entry = known.remember_graph(loadbalancer([listener("l")]), ACTIVE)
    statuses = roll_up(entry.graph, None)
    assert known.written(entry, 0.0) is None
    known.remember_written(entry, statuses, 10.0)
    assert known.written(entry, 39.0) is statuses
    assert known.written(entry, 41.0) is None


def test_converging_is_read_from_the_version() -> None:
    known = KnownState()
    graph = loadbalancer([listener("l")])
    assert not known.remember_graph(graph, ACTIVE).converging
    assert known.remember_graph(graph, (ProvisioningStatus.PENDING_UPDATE.value, 4)).converging


def test_pending_writes_keep_the_newest_liveness_and_every_update_in_order() -> None:
    pending = PendingWrites()
    pending.hear(AMP, LB_ID, 10.0)
    pending.hear(AMP, LB_ID, 9.0)  # late
    pending.add_counter_update(StampedUpdate(AMP, LB_ID, None, lambda current: {}))
    pending.add_counter_update(
        StampedUpdate(AMP, LB_ID, None, lambda current: {ListenerId("l"): current[ListenerId("l")]})
    )
    assert pending.last_heard() == {AMP: 10.0}
    batch = pending.take()
    assert batch.heard == {AMP: (LB_ID, 10.0)}
    assert len(batch.counter_updates) == 2
    assert batch.loadbalancers == {LB_ID}
    assert not pending.take()
    pending.hear(AMP, LB_ID, 12.0)
    pending.restore_liveness(batch)  # a failed flush puts its liveness back, never older
    assert pending.last_heard() == {AMP: 12.0}
