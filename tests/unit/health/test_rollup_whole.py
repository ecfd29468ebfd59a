"""The roll-up as a whole: the "just deployed" view, coverage of every object, the type."""

from __future__ import annotations

import dataclasses

import pytest

from lbaas.health.rollup import OperatingStatuses, roll_up
from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import ListenerId, LoadBalancer, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import ListenerState, MemberState, PoolState

from .builders import listener, loadbalancer, member, monitor, policy, pool, report, rule

ERROR = OperatingStatus.ERROR

ONLINE = OperatingStatus.ONLINE
OFFLINE = OperatingStatus.OFFLINE
DRAINING = OperatingStatus.DRAINING
NO_MONITOR = OperatingStatus.NO_MONITOR
HM = monitor()
HM_OFF = monitor(admin=False)
UP = MemberState.UP


# The "just deployed" view: (graph, expected statuses of every object)
NOTHING_HEARD_CASES: list[tuple[str, LoadBalancer, dict[str, OperatingStatus]]] = [
    (
        "everything enabled",
        loadbalancer(
            [listener("l", "p")],
            [pool("p", [member("m")], hm=HM), pool("q", [member("n")])],
        ),
        # q is on no listener: OFFLINE, its members as created.
        {
            "lb-1": ONLINE,
            "l": ONLINE,
            "p": ONLINE,
            "q": OFFLINE,
            "m": OFFLINE,
            "n": NO_MONITOR,
            "hm-1": ONLINE,
        },
    ),
    (
        "disabled listener, pool and members",
        loadbalancer(
            [listener("l", admin=False)],
            [
                pool("p", [member("m")], admin=False),
                pool("q", [member("n", admin=False), member("o", weight=0)], hm=HM_OFF),
            ],
        ),
        {
            "lb-1": ONLINE,
            "l": OFFLINE,
            "p": OFFLINE,
            "q": OFFLINE,
            "m": OFFLINE,
            "n": OFFLINE,
            "o": DRAINING,
            "hm-1": OFFLINE,
        },
    ),
    (
        "load balancer admin down",
        loadbalancer([listener("l", "p")], [pool("p", [member("m")])], admin=False),
        {"lb-1": OFFLINE, "l": OFFLINE, "p": OFFLINE, "m": OFFLINE},
    ),
    ("empty load balancer", loadbalancer(), {"lb-1": ONLINE}),
]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [case[1:] for case in NOTHING_HEARD_CASES],
    ids=[case[0] for case in NOTHING_HEARD_CASES],
)
def test_nothing_heard_yet(graph: LoadBalancer, expected: dict[str, OperatingStatus]) -> None:
    assert roll_up(graph, None) == expected


def _redirecting(pool_id: str, *, rules: bool = True, admin: bool = True) -> LoadBalancer:
    """A listener with no default pool whose one L7 policy sends traffic to ``pool_id``."""
    sends = policy("pol", [rule("r")] if rules else [], admin=admin)
    sends = dataclasses.replace(sends, redirect_pool_id=PoolId(pool_id))
    return loadbalancer([listener("l", policies=[sends])], [pool(pool_id, [member("m")])])


# (graph, whether the pool is on a listener): a pool carries traffic, and so can be ONLINE,
# only when a listener uses it, as its default pool or through an enabled L7 policy with
# rules; any other is OFFLINE whatever a report says of it (as Octavia leaves it).
POOL_USE_CASES: list[tuple[str, LoadBalancer, bool]] = [
    ("default pool", loadbalancer([listener("l", "q")], [pool("q", [member("m")])]), True),
    ("standalone", loadbalancer([listener("l")], [pool("q", [member("m")])]), False),
    ("no listener at all", loadbalancer([], [pool("q", [member("m")])]), False),
    ("an L7 policy's target", _redirecting("q"), True),
    ("target of a policy without rules", _redirecting("q", rules=False), False),
    ("target of a disabled policy", _redirecting("q", admin=False), False),
]


@pytest.mark.parametrize("heard", [True, False], ids=["reported up", "nothing heard"])
@pytest.mark.parametrize(
    ("graph", "on_a_listener"),
    [case[1:] for case in POOL_USE_CASES],
    ids=[case[0] for case in POOL_USE_CASES],
)
def test_only_a_pool_a_listener_uses_goes_online(
    graph: LoadBalancer, on_a_listener: bool, heard: bool
) -> None:
    healthy = report({"l": ListenerState.OPEN}, {"q": (PoolState.UP, {"m": UP})})
    statuses = roll_up(graph, healthy if heard else None)
    assert statuses.pools[PoolId("q")] is (ONLINE if on_a_listener else OFFLINE)
    # Its member (no monitor) keeps the status it was created with, as in Octavia.
    assert statuses.members[MemberId("m")] is NO_MONITOR
    assert statuses.loadbalancer is ONLINE


def test_a_standalone_pool_in_error_does_not_lower_the_load_balancer() -> None:
    graph = loadbalancer([listener("l")], [pool("q", [member("m")], hm=HM)])
    down = report({"l": ListenerState.OPEN}, {"q": (PoolState.DOWN, {"m": MemberState.DOWN})})
    statuses = roll_up(graph, down)
    assert statuses.pools[PoolId("q")] is OFFLINE
    assert statuses.loadbalancer is ONLINE
    attached = roll_up(loadbalancer([listener("l", "q")], list(graph.pools)), down)
    assert (attached.pools[PoolId("q")], attached.loadbalancer) == (ERROR, ERROR)


def test_load_balancer_admin_down_takes_everything_below_offline() -> None:
    graph = loadbalancer([listener("l", "p")], [pool("p", [member("m")], hm=HM)], admin=False)
    healthy = report({"l": ListenerState.OPEN}, {"p": (PoolState.UP, {"m": UP})})
    assert roll_up(graph, healthy) == {
        "lb-1": OFFLINE,
        "l": OFFLINE,
        "p": OFFLINE,
        "m": OFFLINE,
        "hm-1": ONLINE,
    }


def test_every_object_gets_a_status_and_nothing_else_does() -> None:
    graph = loadbalancer(
        [listener("l", "p", policies=[policy("pol", [rule("r1"), rule("r2")])])],
        [pool("p", [member("m1"), member("m2")], hm=HM), pool("unused")],
    )
    strangers = report(
        {"l": ListenerState.OPEN, "ghost-listener": ListenerState.OPEN},
        {"p": (PoolState.UP, {"m1": UP, "ghost-member": UP}), "ghost-pool": (PoolState.UP, {})},
    )
    statuses = roll_up(graph, strangers)
    assert set(statuses) == {"lb-1", "l", "pol", "r1", "r2", "p", "unused", "m1", "m2", "hm-1"}
    assert statuses.pools[PoolId("unused")] is OFFLINE
    assert statuses.members[MemberId("m2")] is OFFLINE


def test_statuses_are_read_only_and_compare_as_a_mapping() -> None:
    statuses = roll_up(loadbalancer([listener("l")]), None)
    assert isinstance(statuses, OperatingStatuses)
    assert statuses == {"lb-1": ONLINE, "l": ONLINE}
    assert len(statuses) == 2 and statuses["l"] is ONLINE
    with pytest.raises(TypeError):
        statuses.listeners[ListenerId("l")] = OFFLINE  # type: ignore[index]
    with pytest.raises(AttributeError):
        statuses.loadbalancer = OFFLINE  # type: ignore[misc]


def test_a_report_for_another_load_balancer_is_refused() -> None:
    with pytest.raises(ValueError, match="lb-2"):
        roll_up(loadbalancer(), report(lb_id=LoadBalancerId("lb-2")))
