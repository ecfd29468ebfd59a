"""One authenticated heartbeat: liveness, counters and statuses land in the store."""

from __future__ import annotations

from lbaas.health.counters import total
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor
from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId
from lbaas.model.health import HealthReport, ListenerHealth, ListenerState, MemberState, PoolState
from tests.support.clock import FakeClock

from .builders import LB_ID, counters, listener, loadbalancer, member, monitor, pool, report

AMP = AmphoraId("amp-1")
EPOCH = 42


def scene() -> tuple[InMemoryHealthStore, HeartbeatProcessor, FakeClock]:
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB_ID)
    store.put_graph(loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=monitor())]))
    clock = FakeClock()
    return store, HeartbeatProcessor(store, clock=clock), clock


def healthy(bytes_in: int = 10) -> HealthReport:
    return report(
        {"l": ListenerHealth(ListenerState.OPEN, counters(bytes_in, 1, 1, 1, 0))},
        {"p": (PoolState.UP, {"m": MemberState.UP})},
    )


def test_heartbeat_is_recorded_counted_and_rolled_up() -> None:
    store, processor, clock = scene()
    outcome = processor.process(AMP, EPOCH, healthy())
    assert outcome is HeartbeatOutcome.APPLIED
    assert store.last_seen(AMP) == clock.now
    assert total(store.counter_records(AMP)[ListenerId("l")]) == counters(10, 1, 1, 1, 0)
    assert dict(store.statuses(LB_ID) or {}) == {
        "lb-1": OperatingStatus.ONLINE,
        "l": OperatingStatus.ONLINE,
        "p": OperatingStatus.ONLINE,
        "m": OperatingStatus.ONLINE,
        "hm-1": OperatingStatus.ONLINE,
    }


def test_counters_fold_across_heartbeats() -> None:
    store, processor, _ = scene()
    processor.process(AMP, EPOCH, healthy(100))
    processor.process(AMP, EPOCH, healthy(5))  # HAProxy reloaded
    assert total(store.counter_records(AMP)[ListenerId("l")]).bytes_in == 105


def test_unknown_amphora_changes_nothing() -> None:
    store, processor, _ = scene()
    stranger = AmphoraId("amp-unknown")
    assert processor.process(stranger, EPOCH, healthy()) is HeartbeatOutcome.UNKNOWN_AMPHORA
    assert store.last_seen(stranger) is None
    assert store.counter_records(stranger) == {}
    assert store.statuses(LB_ID) is None


def test_amphora_claiming_another_load_balancer_is_ignored() -> None:
    store, processor, _ = scene()
    wrong = report({"l": ListenerState.OPEN}, lb_id=LoadBalancerId("lb-other"))
    assert processor.process(AMP, EPOCH, wrong) is HeartbeatOutcome.UNKNOWN_AMPHORA
    assert store.last_seen(AMP) is None


def test_while_converging_liveness_and_counters_still_count_but_statuses_wait() -> None:
    store, processor, clock = scene()
    store.set_pending(LB_ID)
    assert processor.process(AMP, EPOCH, healthy(7)) is HeartbeatOutcome.DEFERRED
    assert store.last_seen(AMP) == clock.now
    assert total(store.counter_records(AMP)[ListenerId("l")]).bytes_in == 7
    assert store.statuses(LB_ID) is None


def test_deleted_load_balancer_only_records_liveness() -> None:
    store = InMemoryHealthStore()
    store.add_amphora(AMP, LB_ID)
    processor = HeartbeatProcessor(store, clock=FakeClock())
    assert processor.process(AMP, EPOCH, healthy()) is HeartbeatOutcome.LOADBALANCER_GONE
    assert store.last_seen(AMP) is not None
    assert store.counter_records(AMP) == {}


def test_counters_of_listeners_not_in_the_graph_are_not_stored() -> None:
    store, processor, _ = scene()
    with_ghost = report(
        {
            "l": ListenerHealth(ListenerState.OPEN, counters(1)),
            "deleted": ListenerHealth(ListenerState.OPEN, counters(99)),
        }
    )
    processor.process(AMP, EPOCH, with_ghost)
    assert set(store.counter_records(AMP)) == {ListenerId("l")}


def test_the_roll_up_is_redone_only_when_the_graph_or_the_states_change() -> None:
    store, processor, _ = scene()
    processor.process(AMP, EPOCH, healthy(1))
    first = store.statuses(LB_ID)
    processor.process(AMP, EPOCH, healthy(2))  # only counters moved
    assert store.statuses(LB_ID) is first
    down = report(
        {"l": ListenerHealth(ListenerState.OPEN, counters(3))},
        {"p": (PoolState.UP, {"m": MemberState.DOWN})},
    )
    processor.process(AMP, EPOCH, down)
    assert (store.statuses(LB_ID) or {})["m"] is OperatingStatus.ERROR
    store.put_graph(
        loadbalancer([listener("l", "p")], [pool("p", [member("m", admin=False)], hm=monitor())])
    )
    processor.process(AMP, EPOCH, down)
    assert (store.statuses(LB_ID) or {})["m"] is OperatingStatus.OFFLINE


def test_the_vip_probe_is_kept_as_current_gauges_that_never_accumulate() -> None:
    store, processor, _ = scene()

    def probed(up: bool | None, bytes_in: int) -> HealthReport:
        return report({"l": ListenerHealth(ListenerState.OPEN, counters(bytes_in), vip_up=up)})

    processor.process(AMP, EPOCH, probed(True, 100))
    kept = total(store.counter_records(AMP)[ListenerId("l")])
    assert (kept.vip_probes, kept.vip_answered) == (1, 1)
    processor.process(AMP, EPOCH, probed(False, 5))  # a reload moved the counters to base
    kept = total(store.counter_records(AMP)[ListenerId("l")])
    assert (kept.bytes_in, kept.vip_probes, kept.vip_answered) == (105, 1, 0)
    processor.process(AMP, EPOCH + 1, probed(None, 1))  # an agent that does not probe
    kept = total(store.counter_records(AMP)[ListenerId("l")])
    assert (kept.vip_probes, kept.vip_answered) == (0, 0)
