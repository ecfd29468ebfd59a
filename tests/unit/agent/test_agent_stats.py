"""Statistics to health reports: states, and counters that survive a new worker."""

from __future__ import annotations

from lbaas.agent.stats import StatsCollector, listener_state, member_state
from lbaas.model.graph import ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import ListenerState, MemberState, PoolState


def _frontend(name: str, *, status: str = "OPEN", scur: int = 0, slim: int = 100) -> dict[str, str]:
    row = {"pxname": name, "svname": "FRONTEND", "status": status, "scur": str(scur)}
    row["slim"] = str(slim)
    for key in ("bin", "bout", "stot", "ereq"):
        row[key] = "0"
    return row


def _rows(**counters: int) -> list[dict[str, str]]:
    row = _frontend("fe_l1", scur=2)
    row.update({key: str(value) for key, value in counters.items()})
    return [
        row,
        {"pxname": "be_p1", "svname": "srv_m1", "status": "UP"},
        {"pxname": "be_p1", "svname": "srv_m2", "status": "MAINT"},
        {"pxname": "be_p1", "svname": "BACKEND", "status": "UP"},
        {"pxname": "stats", "svname": "FRONTEND", "status": "OPEN"},
        {"pxname": "be_p2", "svname": "BACKEND", "status": "DOWN"},
    ]


def test_states_are_mapped_from_names_and_status() -> None:
    report = StatsCollector(LoadBalancerId("lb")).report("1", _rows(stot=3))
    assert report.loadbalancer_id == "lb"
    assert set(report.listeners) == {ListenerId("l1")}
    listener = report.listeners[ListenerId("l1")]
    assert listener.state is ListenerState.OPEN
    assert listener.counters.active_connections == 2
    assert report.pools[PoolId("p1")].state is PoolState.UP
    assert report.pools[PoolId("p1")].members == {
        MemberId("m1"): MemberState.UP,
        MemberId("m2"): MemberState.MAINT,
    }
    assert report.pools[PoolId("p2")].state is PoolState.DOWN


def test_listener_states() -> None:
    assert listener_state(_frontend("fe_x", scur=5, slim=10)) is ListenerState.OPEN
    assert listener_state(_frontend("fe_x", scur=10, slim=10)) is ListenerState.FULL
    assert listener_state(_frontend("fe_x", status="FULL")) is ListenerState.FULL
    assert listener_state(_frontend("fe_x", status="STOP")) is ListenerState.DOWN


def test_member_states() -> None:
    expected = {
        "UP": MemberState.UP,
        "UP 1/3": MemberState.UP,
        "DOWN": MemberState.DOWN,
        "DOWN 1/2": MemberState.DOWN,
        "NOLB": MemberState.DRAIN,
        "DRAIN": MemberState.DRAIN,
        "MAINT": MemberState.MAINT,
        "MAINT (via be/x)": MemberState.MAINT,
        "no check": MemberState.NO_CHECK,
    }
    assert {status: member_state(status) for status in expected} == expected


def test_counters_are_carried_over_a_new_worker() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))
    collector.report("1", _rows(bin=100, bout=1000, stot=10, ereq=1))
    # A reload: the new worker counts from zero.
    report = collector.report("2", _rows(bin=5, bout=50, stot=1, ereq=0))
    counters = report.listeners[ListenerId("l1")].counters
    assert (counters.bytes_in, counters.bytes_out) == (105, 1050)
    assert (counters.total_connections, counters.request_errors) == (11, 1)
    later = collector.report("2", _rows(bin=7, bout=70, stot=2, ereq=0))
    assert later.listeners[ListenerId("l1")].counters.total_connections == 12


def test_counters_going_backwards_count_as_a_new_worker() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))
    collector.report("1", _rows(stot=10))
    report = collector.report("1", _rows(stot=4))
    assert report.listeners[ListenerId("l1")].counters.total_connections == 14
