"""Leader election on the real PostgreSQL, and the distributed poll that obeys it.

Two "health managers" campaign for ``distributed-poll`` with connections of their own:
exactly one leads; when it stops, the other takes over (the lease released, not left to
expire). A poller whose process does not lead never polls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from lbaas.coordination.leader import Leadership
from lbaas.coordination.postgres import PostgresCoordinator
from lbaas.health.distributed_poll import DistributedStatusPoller
from lbaas.health.memory_store import InMemoryHealthStore
from tests.coordination.engines import POSTGRES_URL, postgres_coordinator


@pytest.fixture
def table() -> Iterator[str]:
    with postgres_coordinator() as pg:
        yield pg.table


def _wait(what: str, test: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not test():
        assert time.monotonic() < deadline, f"not within 60 s: {what}"
        time.sleep(0.02)


def test_one_health_manager_leads_and_the_other_takes_over_when_it_stops(table: str) -> None:
    a = Leadership(PostgresCoordinator(POSTGRES_URL, table), "distributed-poll", 2.0,
                   holder="ctl-a", owns_engine=True).start()  # fmt: skip
    _wait("a leads", a.leads)
    b = Leadership(PostgresCoordinator(POSTGRES_URL, table), "distributed-poll", 2.0,
                   holder="ctl-b", owns_engine=True).start()  # fmt: skip
    try:
        for _ in range(20):  # b campaigns all along, and never leads beside a
            assert a.leads() and not b.leads()
            time.sleep(0.05)
        a.stop()
        _wait("b takes over", b.leads)
        assert not a.leads()
    finally:
        b.stop()


class CountingEvent(threading.Event):
    """A stop event whose first ``rounds`` waits time out at once (a round each)."""

    def __init__(self, rounds: int) -> None:
        super().__init__()
        self.rounds = rounds

    def wait(self, timeout: float | None = None) -> bool:
        self.rounds -= 1
        return self.rounds < 0


def test_a_poller_polls_only_while_its_process_leads() -> None:
    asked: list[str] = []

    def loadbalancers() -> list[str]:
        asked.append("poll")
        return []

    poller = DistributedStatusPoller(
        InMemoryHealthStore(), loadbalancers, lambda: lambda graph: None
    )
    poller.run(CountingEvent(5), 0.01, leads=lambda: False)
    assert asked == []
    turns = iter([False, True, True, False, True])
    poller.run(CountingEvent(5), 0.01, leads=lambda: next(turns))
    assert asked == ["poll"] * 3
