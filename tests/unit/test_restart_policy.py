"""The supervisor's restart policy: a single crash is restarted at once, a crash loop backs
off, and exits older than the window are forgotten. The clock is a ``FakeClock``."""

from __future__ import annotations

import pytest

from lbaas.restart_policy import RestartPolicy
from tests.support.clock import FakeClock


def policy(clock: FakeClock) -> RestartPolicy:
    return RestartPolicy(burst=3, window=60.0, first_delay=1.0, max_delay=30.0, clock=clock)


def test_crashes_within_the_burst_are_restarted_at_once() -> None:
    clock = FakeClock()
    restarts = policy(clock)
    delays = []
    for _ in range(3):
        delays.append(restarts.exited())
        clock.advance(2.0)  # kills less than 30 s apart: the old policy's 1, 2, 4 s
    assert delays == [0.0, 0.0, 0.0]


def test_a_crash_loop_backs_off_doubling_up_to_the_cap() -> None:
    clock = FakeClock()
    restarts = policy(clock)
    delays = []
    for _ in range(12):
        delays.append(restarts.exited())
        clock.advance(0.1)
    assert delays == [0.0, 0.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0]


def test_exits_older_than_the_window_are_forgotten() -> None:
    clock = FakeClock()
    restarts = policy(clock)
    for _ in range(5):
        restarts.exited()
    assert restarts.exited() == 4.0
    clock.advance(60.0)  # a child that then ran well for a whole window
    assert restarts.exited() == 0.0


def test_crashes_spread_over_the_window_never_back_off() -> None:
    clock = FakeClock()
    restarts = policy(clock)
    delays = []
    for _ in range(20):  # one crash every 25 s: at most 3 in any 60 s
        delays.append(restarts.exited())
        clock.advance(25.0)
    assert set(delays) == {0.0}


@pytest.mark.parametrize(
    "kwargs",
    [{"burst": 0}, {"window": 0.0}, {"first_delay": 0.0}, {"first_delay": 5.0, "max_delay": 1.0}],
)
def test_a_policy_that_could_not_work_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="restart policy"):
        RestartPolicy(**kwargs)  # type: ignore[arg-type]
