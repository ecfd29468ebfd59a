"""The storm guard judges silence per host: a whole host lost is a host loss, not a storm.

On two or three hosts one of them often runs more than half the amphorae; losing it must
get them rebuilt, while most hosts silent at once, or a scattering of silent amphorae on
hosts that still speak, still stops automatic failover.
"""

from __future__ import annotations

import threading

import pytest

from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.probe import DataPlaneProbe
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.health.store import AmphoraHeartbeat
from lbaas.health.storm import storm_reason
from lbaas.model.graph import AmphoraId, LoadBalancer, LoadBalancerId
from tests.support.clock import FakeClock
from tests.support.graphs import load_balancer

STALE_AFTER = 3.0
T0 = 10_000.0


class HostFleet:
    """Amphorae on hosts: ``layout`` maps a host to its number of amphorae."""

    def __init__(self, layout: dict[str, int]) -> None:
        self.clock = FakeClock(T0)
        self.store = InMemoryHealthStore()
        self.on: dict[str, list[AmphoraId]] = {}
        for host, count in layout.items():
            self.on[host] = [AmphoraId(f"{host}-amp-{n}") for n in range(count)]
            for amp in self.on[host]:
                self.store.add_amphora(amp, self.lb(amp), last_seen=T0, host=host)
        self.sweeper = StaleAmphoraSweeper(
            self.store, stale_after=STALE_AFTER, failover_threshold=0.5, clock=self.clock
        )

    @staticmethod
    def lb(amp: AmphoraId) -> LoadBalancerId:
        return LoadBalancerId(f"lb-{amp}")

    def silence(self, silent: set[AmphoraId]) -> None:
        self.clock.advance(STALE_AFTER + 1)
        for amphorae in self.on.values():
            for amp in amphorae:
                if amp not in silent:
                    assert self.store.record_heartbeat(amp, self.lb(amp), self.clock())


@pytest.mark.parametrize("layout", [{"h1": 6, "h2": 2}, {"h1": 7, "h2": 2, "h3": 1}])
def test_losing_the_host_with_most_amphorae_fails_them_all_over(layout: dict[str, int]) -> None:
    fleet = HostFleet(layout)
    fleet.silence(set(fleet.on["h1"]))
    result = fleet.sweeper.sweep()
    assert result.alarm is None
    assert set(result.failovers_requested) == set(fleet.on["h1"])
    assert sorted(fleet.store.failover_requests()) == sorted(fleet.on["h1"])


def test_most_hosts_silent_at_once_is_a_storm() -> None:
    fleet = HostFleet({"h1": 2, "h2": 2, "h3": 2})
    fleet.silence({*fleet.on["h1"], *fleet.on["h2"]})
    result = fleet.sweeper.sweep()
    assert result.alarm == "failover storm: 2 of 3 hosts silent at once; automatic failover stopped"
    assert result.failovers_requested == () and fleet.store.failover_requests() == []


def test_every_host_silent_is_a_storm_even_on_two_hosts() -> None:
    fleet = HostFleet({"h1": 3, "h2": 1})
    fleet.silence({*fleet.on["h1"], *fleet.on["h2"]})
    assert fleet.sweeper.sweep().alarm is not None
    assert fleet.store.failover_requests() == []


def test_scattered_silence_on_live_hosts_is_still_a_storm() -> None:
    fleet = HostFleet({"h1": 4, "h2": 4})
    # Three of h1's four and three of h2's four: no host lost, most amphorae silent.
    fleet.silence({*fleet.on["h1"][:3], *fleet.on["h2"][:3]})
    result = fleet.sweeper.sweep()
    assert result.alarm == "failover storm: 6 of 8 amphorae stale; automatic failover stopped"


def test_a_lost_host_plus_scattered_silence_elsewhere_is_judged_on_the_rest() -> None:
    fleet = HostFleet({"h1": 5, "h2": 3, "h3": 2})
    fleet.silence({*fleet.on["h1"], *fleet.on["h2"][:2], fleet.on["h3"][0]})
    result = fleet.sweeper.sweep()
    assert result.alarm == (
        "failover storm: 3 of 5 amphorae outside 1 lost host(s) stale; automatic failover stopped"
    )
    healthy = HostFleet({"h1": 5, "h2": 3, "h3": 3})
    healthy.silence({*healthy.on["h1"], healthy.on["h2"][0]})
    assert set(healthy.sweeper.sweep().failovers_requested) == {*healthy.on["h1"], "h2-amp-0"}


def test_without_hosts_the_whole_data_plane_is_one_group() -> None:
    heard = [AmphoraHeartbeat(AmphoraId(f"a{n}"), LoadBalancerId("lb"), T0) for n in range(4)]
    stale = {AmphoraId("a0"), AmphoraId("a1"), AmphoraId("a2")}
    assert storm_reason(heard, stale, threshold=0.5, min_storm_size=2) is not None
    assert storm_reason(heard, {AmphoraId("a0")}, threshold=0.5, min_storm_size=2) is None
    one_host = [AmphoraHeartbeat(h.amphora_id, h.loadbalancer_id, T0, "only") for h in heard]
    # One host alone (lbaas serve): its silence is judged as before, a storm.
    assert storm_reason(one_host, stale, threshold=0.5, min_storm_size=2) is not None


class MeetingProbe(DataPlaneProbe):
    """Answers "not serving" only once ``expected`` probes are in flight together: probed
    one after another, the first would wait for the others for ever (bounded here)."""

    def __init__(self, expected: int) -> None:
        self.barrier = threading.Barrier(expected, timeout=30)

    def serving(self, graph: LoadBalancer) -> bool:
        self.barrier.wait()
        return False


def test_a_lost_hosts_vips_are_probed_at_once() -> None:
    fleet = HostFleet({"h1": 5, "h2": 5})
    for host in fleet.on.values():
        for amp in host:
            fleet.store.put_graph(load_balancer(ident=fleet.lb(amp)))
    probe = MeetingProbe(expected=5)
    fleet.sweeper = StaleAmphoraSweeper(
        fleet.store, stale_after=STALE_AFTER, failover_threshold=0.5, clock=fleet.clock,
        probe=probe,
    )  # fmt: skip
    fleet.silence(set(fleet.on["h1"]))
    result = fleet.sweeper.sweep()
    assert set(result.failovers_requested) == set(fleet.on["h1"])
    assert probe.barrier.n_waiting == 0 and not probe.barrier.broken
