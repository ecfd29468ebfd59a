"""The roll-up rules of octavia-v2-api.md §3.2, one table per kind of object."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from lbaas.health.rollup import roll_up
from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import (
    HealthMonitor,
    ListenerId,
    Member,
    MemberId,
    PoolId,
)
from lbaas.model.health import ListenerState, MemberState, PoolState

from .builders import listener, loadbalancer, member, monitor, policy, pool, report, rule

ONLINE = OperatingStatus.ONLINE
OFFLINE = OperatingStatus.OFFLINE
DEGRADED = OperatingStatus.DEGRADED
DRAINING = OperatingStatus.DRAINING
ERROR = OperatingStatus.ERROR
NO_MONITOR = OperatingStatus.NO_MONITOR
UP, DOWN, DRAIN, MAINT, NO_CHECK = (
    MemberState.UP,
    MemberState.DOWN,
    MemberState.DRAIN,
    MemberState.MAINT,
    MemberState.NO_CHECK,
)
HM = monitor()
HM_OFF = monitor(admin=False)
NOT_REPORTED = None
UP_, DOWN_ = PoolState.UP, PoolState.DOWN
OPEN, FULL = ListenerState.OPEN, ListenerState.FULL
TWO = [member("a"), member("b")]


# (member, pool's health monitor, pool admin up, member's reported state, expected);
# the pool itself is reported UP, with a second member that is UP.
MEMBER_CASES: list[
    tuple[str, Member, HealthMonitor | None, bool, MemberState | None, OperatingStatus]
] = [
    ("check passing", member("m"), HM, True, UP, ONLINE),
    ("check failing", member("m"), HM, True, DOWN, ERROR),
    ("draining", member("m"), HM, True, DRAIN, DRAINING),
    ("weight 0, check passing", member("m", weight=0), HM, True, UP, DRAINING),
    ("weight 0, check failing", member("m", weight=0), HM, True, DOWN, DRAINING),
    ("weight 0, no monitor", member("m", weight=0), None, True, UP, DRAINING),
    ("maintenance", member("m"), HM, True, MAINT, OFFLINE),
    ("maintenance beats weight 0", member("m", weight=0), HM, True, MAINT, OFFLINE),
    ("admin down", member("m", admin=False), HM, True, UP, OFFLINE),
    ("admin down beats weight 0", member("m", weight=0, admin=False), HM, True, DRAIN, OFFLINE),
    ("admin down, no monitor", member("m", admin=False), None, True, UP, OFFLINE),
    ("pool admin down", member("m"), HM, False, UP, OFFLINE),
    ("no check reported", member("m"), HM, True, NO_CHECK, NO_MONITOR),
    ("no monitor, up", member("m"), None, True, UP, NO_MONITOR),
    ("no monitor, down", member("m"), None, True, DOWN, NO_MONITOR),
    ("no monitor, not reported", member("m"), None, True, NOT_REPORTED, NO_MONITOR),
    ("monitor disabled, up", member("m"), HM_OFF, True, UP, NO_MONITOR),
    ("monitor disabled, down", member("m"), HM_OFF, True, DOWN, NO_MONITOR),
    ("monitored, not reported", member("m"), HM, True, NOT_REPORTED, OFFLINE),
]


@pytest.mark.parametrize(
    ("the_member", "hm", "pool_admin", "state", "expected"),
    [case[1:] for case in MEMBER_CASES],
    ids=[case[0] for case in MEMBER_CASES],
)
def test_member_status(
    the_member: Member,
    hm: HealthMonitor | None,
    pool_admin: bool,
    state: MemberState | None,
    expected: OperatingStatus,
) -> None:
    graph = loadbalancer(
        [listener("l", "p")], [pool("p", [the_member, member("other")], hm=hm, admin=pool_admin)]
    )
    reported = {"other": UP} | ({} if state is None else {"m": state})
    statuses = roll_up(graph, report({"l": ListenerState.OPEN}, {"p": (PoolState.UP, reported)}))
    assert statuses.members[MemberId("m")] is expected


@pytest.mark.parametrize(
    ("hm", "expected"),
    [(HM, OFFLINE), (HM_OFF, NO_MONITOR), (None, NO_MONITOR)],
    ids=["monitored", "monitor disabled", "no monitor"],
)
def test_member_of_a_pool_the_report_leaves_out(
    hm: HealthMonitor | None, expected: OperatingStatus
) -> None:
    graph = loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=hm)])
    statuses = roll_up(graph, report({"l": ListenerState.OPEN}, {}))
    assert statuses.members[MemberId("m")] is expected


# (member weights/admin + monitor, reported pool state or None, reported member states,
#  pool admin up, expected pool status)
# fmt: off
POOL_CASES: list[tuple[str, list[Member], HealthMonitor | None, PoolState | None, dict[str, MemberState], bool, OperatingStatus]] = [
    ("no members, backend up",         [],                           HM,   UP_,   {},                   True,  ONLINE),
    ("no members, backend down",       [],                           HM,   DOWN_, {},                   True,  ONLINE),
    ("all members up",                 TWO,                          HM,   UP_,   {"a": UP, "b": UP},   True,  ONLINE),
    ("one member failing",             TWO,                          HM,   UP_,   {"a": UP, "b": DOWN}, True,  DEGRADED),
    ("draining and failing",           TWO,                          HM,   UP_,   {"a": DRAIN, "b": DOWN}, True, DEGRADED),
    ("one up, one in maintenance",     TWO,                          HM,   UP_,   {"a": UP, "b": MAINT}, True, ONLINE),
    ("all members failing",            TWO,                          HM,   DOWN_, {"a": DOWN, "b": DOWN}, True, ERROR),
    ("backend reported down",          [member("a")],                HM,   DOWN_, {"a": UP},            True,  ERROR),
    ("none working though backend up", [member("a")],                HM,   UP_,   {"a": DOWN},          True,  ERROR),
    ("every member admin down",        [member("a", admin=False)],   HM,   DOWN_, {},                   True,  ERROR),
    ("all draining",                   [member("a", weight=0)],      HM,   UP_,   {"a": DRAIN},         True,  ONLINE),
    ("no monitor",                     [member("a")],                None, UP_,   {"a": UP},            True,  ONLINE),
    ("not reported",                   [member("a")],                HM,   None,  {},                   True,  OFFLINE),
    ("admin down",                     [member("a")],                HM,   UP_,   {"a": UP},            False, OFFLINE),
]
# fmt: on


@pytest.mark.parametrize(
    ("members", "hm", "pool_state", "member_states", "admin", "expected"),
    [case[1:] for case in POOL_CASES],
    ids=[case[0] for case in POOL_CASES],
)
def test_pool_status(
    members: list[Member],
    hm: HealthMonitor | None,
    pool_state: PoolState | None,
    member_states: dict[str, MemberState],
    admin: bool,
    expected: OperatingStatus,
) -> None:
    graph = loadbalancer([listener("l", "p")], [pool("p", members, hm=hm, admin=admin)])
    pools = {} if pool_state is None else {"p": (pool_state, member_states)}
    statuses = roll_up(graph, report({"l": ListenerState.OPEN}, pools))
    assert statuses.pools[PoolId("p")] is expected


# (listener admin up, load balancer admin up, reported listener state or None, expected)
LISTENER_CASES: list[tuple[str, bool, bool, ListenerState | None, OperatingStatus]] = [
    ("accepting", True, True, ListenerState.OPEN, ONLINE),
    ("at its connection limit", True, True, ListenerState.FULL, DEGRADED),
    ("reported down", True, True, ListenerState.DOWN, ERROR),
    ("enabled but not reported", True, True, None, ERROR),
    ("disabled", False, True, None, OFFLINE),
    ("disabled though reported", False, True, ListenerState.OPEN, OFFLINE),
    ("load balancer admin down", True, False, None, OFFLINE),
]


@pytest.mark.parametrize(
    ("admin", "lb_admin", "state", "expected"),
    [case[1:] for case in LISTENER_CASES],
    ids=[case[0] for case in LISTENER_CASES],
)
def test_listener_status(
    admin: bool, lb_admin: bool, state: ListenerState | None, expected: OperatingStatus
) -> None:
    graph = loadbalancer([listener("l", admin=admin)], admin=lb_admin)
    statuses = roll_up(graph, report({} if state is None else {"l": state}))
    assert statuses.listeners[ListenerId("l")] is expected


_OK = (UP_, {"a": UP})
# (load balancer admin up, listener states of l1/l2, pool reports of p1/p2, expected)
# fmt: off
LB_CASES: list[tuple[str, bool, Mapping[str, ListenerState], Mapping[str, tuple[PoolState, dict[str, MemberState]]], OperatingStatus]] = [
    ("all well",             True,  {"l1": OPEN, "l2": OPEN}, {"p1": _OK, "p2": _OK},                         ONLINE),
    ("a listener full",      True,  {"l1": FULL, "l2": OPEN}, {"p1": _OK, "p2": _OK},                         DEGRADED),
    ("a listener missing",   True,  {"l1": OPEN},             {"p1": _OK, "p2": _OK},                         DEGRADED),
    ("a pool degraded",      True,  {"l1": OPEN, "l2": OPEN}, {"p1": (UP_, {"a": UP, "b": DOWN}), "p2": _OK},  DEGRADED),
    ("a pool in error",      True,  {"l1": OPEN, "l2": OPEN}, {"p1": (DOWN_, {"a": DOWN, "b": DOWN}), "p2": _OK}, ERROR),
    ("error beats degraded", True,  {"l1": FULL, "l2": OPEN}, {"p1": (DOWN_, {}), "p2": _OK},                 ERROR),
    ("a pool not reported",  True,  {"l1": OPEN, "l2": OPEN}, {"p1": _OK},                                    ONLINE),
    ("admin down",           False, {"l1": FULL},             {"p1": (DOWN_, {})},                            OFFLINE),
]
# fmt: on


@pytest.mark.parametrize(
    ("admin", "listeners", "pools", "expected"),
    [case[1:] for case in LB_CASES],
    ids=[case[0] for case in LB_CASES],
)
def test_loadbalancer_status(
    admin: bool,
    listeners: Mapping[str, ListenerState],
    pools: Mapping[str, tuple[PoolState, dict[str, MemberState]]],
    expected: OperatingStatus,
) -> None:
    graph = loadbalancer(
        [listener("l1", "p1"), listener("l2", "p2")],
        [pool("p1", [member("a"), member("b")], hm=HM), pool("p2", [member("a2")])],
        admin=admin,
    )
    assert roll_up(graph, report(listeners, pools)).loadbalancer is expected


@pytest.mark.parametrize("heard", [True, False], ids=["reported", "nothing heard"])
@pytest.mark.parametrize(("enabled", "expected"), [(True, ONLINE), (False, OFFLINE)])
def test_monitor_policy_and_rule_follow_their_admin_state(
    heard: bool, enabled: bool, expected: OperatingStatus
) -> None:
    graph = loadbalancer(
        [listener("l", "p", policies=[policy("pol", [rule("r", admin=enabled)], admin=enabled)])],
        [pool("p", [member("m")], hm=monitor("hm", admin=enabled))],
    )
    observed = (
        report({"l": ListenerState.OPEN}, {"p": (PoolState.UP, {"m": UP})}) if heard else None
    )
    statuses = roll_up(graph, observed)
    assert statuses.health_monitors == {"hm": expected}
    assert statuses.l7policies == {"pol": expected}
    assert statuses.l7rules == {"r": expected}
