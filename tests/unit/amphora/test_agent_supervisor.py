"""The agent's supervisor: its first round runs when it starts, not an interval later.

A restarted agent serves before it has restarted the HAProxies that died with its
predecessor (issue 10: a converge waiting for the agent must not wait for that too);
the supervisor's first round does it at once, beside the API.
"""

from __future__ import annotations

import threading

from lbaas.fleet.agent_service import Supervisor


def test_first_round_runs_at_once_then_every_interval() -> None:
    rounds = threading.Event()
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        rounds.set()

    # An hour's interval: a round seen at all can only be the first, immediate one.
    supervisor = Supervisor(check, interval=3600.0, first_at_once=True)
    supervisor.start()
    try:
        assert rounds.wait(60), "the first supervise round never ran"
    finally:
        supervisor.stop()
    assert calls == [1]


def test_a_failing_first_round_does_not_stop_supervising() -> None:
    second = threading.Event()
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first round fails")
        second.set()

    supervisor = Supervisor(check, interval=0.01, first_at_once=True)
    supervisor.start()
    try:
        assert second.wait(60), "supervising stopped after a failed round"
    finally:
        supervisor.stop()


def test_without_first_at_once_nothing_runs_before_the_interval() -> None:
    calls: list[int] = []
    supervisor = Supervisor(lambda: calls.append(1), interval=3600.0)
    supervisor.start()
    supervisor.stop()
    assert calls == []
